"""symtrace.func.stack_module_state: the parameters and buffers of several models of one
architecture stacked along a new leading dim, for an ensemble run with vmap and
functional_call (as torch.func.stack_module_state)."""
from .. import _ops


def stack_module_state(models):
    """stack_module_state(models) -> (params, buffers): dicts from each name of models[0]'s
    named_parameters() / named_buffers() to the models' tensors stacked on dim 0. A stacked
    parameter is a new leaf that requires grad as the originals do (they must agree); the
    stacked buffers do not require grad."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    per_model = [dict(m.named_parameters()) for m in models]
    params = {}
    for name, first in per_model[0].items():
        ts = [p[name] for p in per_model]
        if any(t.requires_grad != first.requires_grad for t in ts):
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        params[name] = _ops.stack([t.detach() for t in ts]).requires_grad_(first.requires_grad)
    per_model = [dict(m.named_buffers()) for m in models]
    buffers = {name: _ops.stack([b[name] for b in per_model]) for name in per_model[0]}
    return params, buffers
