"""Samplers (torch.utils.data.sampler): iterables of dataset indices.

Randomness: random permutations and draws come from a Python random.Random.
generator=None (the default) seeds a fresh random.Random at every __iter__
(every epoch) with a number drawn from symtrace's global generator
(st.randint), as torch draws from its default generator: st.manual_seed(s)
before iterating gives the same order again, and successive epochs differ.
generator may also be a symtrace.Generator (a seed drawn from it per epoch,
advancing it, as torch draws from a torch.Generator: reseeding it replays the
orders), an int (a random.Random seeded with it once, at construction: epochs
differ, the run is reproducible), a random.Random (used as is), a numpy
Generator / RandomState (a seed drawn from it per epoch), or another object
with initial_seed() (such as a torch.Generator: treated as that int).
The orders differ from torch's for the same seed (a different generator).
Under a DataLoader the sampler always runs in the main process (workers only fetch
the indices it yields), and each epoch first draws one base seed from the loader's
generator, then lets the sampler draw: the orders are the same for any
num_workers (dataloader.py, "Randomness").
"""
import random

from ... import _C, _generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


def _draw_seed(generator=None):
    """A seed from symtrace's global generator, or a symtrace.Generator (advancing it)."""
    from ... import _ops
    return int(_ops.randint(0, 2 ** 62, (), generator=generator).item())


def _as_generator(generator):
    """What a sampler keeps: None, a random.Random, or a numpy generator."""
    if generator is None or isinstance(generator, (random.Random, _generator.Generator)):
        return generator
    if isinstance(generator, int) and not isinstance(generator, bool):
        return random.Random(generator)
    if hasattr(generator, "integers") or hasattr(generator, "randint"):  # numpy Generator / RandomState
        return generator
    if callable(getattr(generator, "initial_seed", None)):     # a Generator-like object: its seed
        return random.Random(int(generator.initial_seed()))
    raise TypeError(f"generator must be None, an int seed, a random.Random, a numpy random generator or "
                    f"an object with initial_seed(), got {type(generator).__name__}")


def _rng(generator):
    """The random.Random one epoch draws from."""
    if generator is None or isinstance(generator, _generator.Generator):
        return random.Random(_draw_seed(generator))
    if isinstance(generator, random.Random):
        return generator
    if hasattr(generator, "integers"):
        return random.Random(int(generator.integers(0, 2 ** 62)))
    if hasattr(generator, "randint"):
        return random.Random(int(generator.randint(0, 2 ** 31 - 1)))
    return _rng(_as_generator(generator))


def _permutation(n, rng):
    p = list(range(n))
    rng.shuffle(p)
    return p


class Sampler:
    """Base class: an iterable of indices (or of lists of indices, for batch samplers)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError

    def __class_getitem__(cls, item):
        return cls


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of range(len(data_source)) (several, concatenated, when
    num_samples > len), or num_samples draws with replacement."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = _as_generator(generator)
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        rng = _rng(self.generator)
        if self.replacement:
            for _ in range(self.num_samples):
                yield rng.randrange(n)
            return
        for _ in range(self.num_samples // n):
            yield from _permutation(n, rng)
        yield from _permutation(n, rng)[: self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = _as_generator(generator)

    def __iter__(self):
        for i in _permutation(len(self.indices), _rng(self.generator)):
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices in range(len(weights)), drawn with probabilities
    proportional to weights (with or without replacement)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        if isinstance(weights, _C.TensorBase):
            weights = weights.tolist()
        weights = [float(w) for w in weights]
        if any(w < 0 for w in weights) or not any(w > 0 for w in weights):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0 or a negative one)")
        if not replacement and num_samples > len(weights):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = _as_generator(generator)

    def __iter__(self):
        rng = _rng(self.generator)
        n = len(self.weights)
        if self.replacement:
            yield from rng.choices(range(n), weights=self.weights, k=self.num_samples)
            return
        # without replacement: the num_samples largest keys u ** (1 / w) (Efraimidis-Spirakis)
        keys = [(rng.random() ** (1.0 / w) if w > 0 else -1.0, i) for i, w in enumerate(self.weights)]
        keys.sort(reverse=True)
        yield from (i for _, i in keys[: self.num_samples])

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of sampler into lists of batch_size (the last one shorter
    unless drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
