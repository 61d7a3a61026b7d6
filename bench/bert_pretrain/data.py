"""Pretraining batches for bench.bert_pretrain, as numpy arrays.

Two sources with one record layout, that of NVIDIA's and PaddleNLP's BERT
shards: input_ids, segment_ids, input_mask [N, S]; masked_lm_positions,
masked_lm_ids [N, P] (position 0 marks padding: [CLS] is never masked);
next_sentence_labels [N].
- synthetic(...): reproducible from a seed; padded sequences of random length,
  min(20, len - 1) masked positions each, random NSP labels.
- hdf5_records(input_dir): every *.hdf5 / *.h5 shard in the folder (h5py).

to_batch() turns records into the model's inputs with fixed shapes (so a
compiled step is reused): the masked positions are flattened with a batch
offset (PaddleNLP's collate) and padded slots keep their place with label -100
(ignored by the loss) instead of being dropped."""
import glob
import os

import numpy as np

__all__ = ["KEYS", "synthetic_records", "hdf5_records", "write_hdf5_shard", "to_batch", "batches",
           "to_symtrace", "to_torch", "max_predictions"]

KEYS = ("input_ids", "segment_ids", "input_mask", "masked_lm_positions", "masked_lm_ids",
        "next_sentence_labels")
MAX_PRED = 20


def max_predictions(seq_len):
    return max(1, min(MAX_PRED, seq_len - 1))


def synthetic_records(n, seq_len, vocab_size, seed=0):
    """n records of length seq_len: a random valid length in [seq_len/2, seq_len],
    [CLS]=1 first, two segments split by [SEP]=2, padding 0, masked tokens
    replaced by [MASK]=3 with their original id as the label."""
    rng = np.random.RandomState(seed)
    P = max_predictions(seq_len)
    ids = np.zeros((n, seq_len), np.int64)
    seg = np.zeros((n, seq_len), np.int64)
    msk = np.zeros((n, seq_len), np.int64)
    pos = np.zeros((n, P), np.int64)
    lab = np.zeros((n, P), np.int64)
    nsp = rng.randint(0, 2, size=n).astype(np.int64)
    for i in range(n):
        L = int(rng.randint(max(2, seq_len // 2), seq_len + 1))
        toks = rng.randint(5, vocab_size, size=L)
        toks[0] = 1
        cut = max(1, L // 2)
        toks[cut] = 2
        ids[i, :L] = toks
        seg[i, cut:L] = 1
        msk[i, :L] = 1
        k = min(P, L - 1)
        p = np.sort(rng.choice(np.arange(1, L), size=k, replace=False))
        pos[i, :k] = p
        lab[i, :k] = ids[i, p]
        ids[i, p] = 3
    return {"input_ids": ids, "segment_ids": seg, "input_mask": msk, "masked_lm_positions": pos,
            "masked_lm_ids": lab, "next_sentence_labels": nsp}


def hdf5_records(input_dir):
    """All records of the shards in input_dir, concatenated in file-name order."""
    try:
        import h5py
    except ImportError as e:
        raise RuntimeError("--input-dir needs h5py (pip install h5py)") from e
    files = sorted(glob.glob(os.path.join(input_dir, "*.hdf5")) + glob.glob(os.path.join(input_dir, "*.h5")))
    if not files:
        raise RuntimeError(f"no *.hdf5 / *.h5 shards in {input_dir}")
    parts = {k: [] for k in KEYS}
    for f in files:
        with h5py.File(f, "r") as h:
            missing = [k for k in KEYS if k not in h]
            if missing:
                raise RuntimeError(f"{f}: missing keys {missing}")
            for k in KEYS:
                parts[k].append(np.asarray(h[k][:]).astype(np.int64))
    return {k: np.concatenate(v, 0) for k, v in parts.items()}


def write_hdf5_shard(path, records):
    import h5py
    with h5py.File(path, "w") as h:
        for k in KEYS:
            h.create_dataset(k, data=records[k].astype(np.int32), compression="gzip")


def to_batch(rec, lo, hi):
    """Records [lo, hi) as the model's inputs (numpy int64)."""
    ids = rec["input_ids"][lo:hi]
    B, S = ids.shape
    pos = rec["masked_lm_positions"][lo:hi]
    lab = np.where(pos > 0, rec["masked_lm_ids"][lo:hi], -100)
    flat = (pos + (np.arange(B, dtype=np.int64) * S)[:, None]).reshape(-1)
    return {"input_ids": ids.copy(), "token_type_ids": rec["segment_ids"][lo:hi].copy(),
            "position_ids": np.broadcast_to(np.arange(S, dtype=np.int64), (B, S)).copy(),
            "input_mask": rec["input_mask"][lo:hi].copy(), "masked_positions": flat,
            "masked_labels": lab.reshape(-1).astype(np.int64),
            "nsp_labels": rec["next_sentence_labels"][lo:hi].reshape(-1).copy()}


ORDER = ("input_ids", "token_type_ids", "position_ids", "input_mask", "masked_positions",
         "masked_labels", "nsp_labels")


def batches(rec, batch_size, steps):
    """steps batches of batch_size records, cycling through rec (a short last
    batch is skipped so every batch has the same shape)."""
    n = len(rec["input_ids"])
    if n < batch_size:
        raise RuntimeError(f"{n} records, fewer than one batch of {batch_size}")
    per_epoch = n // batch_size
    for s in range(steps):
        b = s % per_epoch
        yield s // per_epoch, b, to_batch(rec, b * batch_size, (b + 1) * batch_size)


def to_symtrace(batch):
    import symtrace as st
    return tuple(st.tensor(batch[k]) for k in ORDER)


def to_torch(batch):
    import torch
    return tuple(torch.from_numpy(batch[k]) for k in ORDER)
