"""symtrace.hub: torch.hub's cache directory and loaders, without network access. The cache
directory is torch's ($TORCH_HOME/hub, $TORCH_HOME defaulting to $XDG_CACHE_HOME/torch, i.e.
~/.cache/torch), so weights torch already downloaded are found: load_state_dict_from_url loads a
file already in <hub dir>/checkpoints with symtrace.load and raises RuntimeError for one it would
have to download; download_url_to_file always raises, and load() runs a local hubconf.py
(source="local") but raises for GitHub repositories."""
import os
import sys
from urllib.parse import urlparse

__all__ = ["get_dir", "set_dir", "load_state_dict_from_url", "download_url_to_file", "load"]

_hub_dir = [None]


def _no_network(what):
    return RuntimeError(f"symtrace.hub has no network access: cannot {what}. Download the file yourself and "
                        f"put it in {os.path.join(get_dir(), 'checkpoints')} (or pass model_dir=), or load it "
                        f"with symtrace.load.")


def get_dir():
    """get_dir() -> str: the hub cache directory: set_dir's, else $TORCH_HOME/hub (torch's rule)."""
    if _hub_dir[0] is not None:
        return _hub_dir[0]
    home = os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"),
                                                                   "torch")))
    return os.path.join(home, "hub")


def set_dir(d):
    """set_dir(d): the hub cache directory from now on (~ expanded)."""
    _hub_dir[0] = os.path.expanduser(d)


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """download_url_to_file(url, dst, ...): always raises RuntimeError (no network access)."""
    raise _no_network(f"download {url} to {dst}")


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    """load_state_dict_from_url(url, model_dir=None, map_location=None, ..., file_name=None,
    weights_only=False): symtrace.load of <model_dir or hub dir/checkpoints>/<file_name or the url's
    file name> when that file exists; RuntimeError otherwise (no network access)."""
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        raise _no_network(f"download {url} (no cached file {cached_file})")
    from .serialization import load as _load
    return _load(cached_file, map_location=map_location, weights_only=weights_only)


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """load(repo_or_dir, model, *args, source="github", ..., **kwargs): with source="local", calls the
    entry point model of repo_or_dir/hubconf.py with args and kwargs; source="github" raises
    RuntimeError (no network access)."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        raise _no_network(f"fetch the GitHub repository {repo_or_dir}; clone it and use source='local'")
    hubconf = os.path.join(repo_or_dir, "hubconf.py")
    if not os.path.exists(hubconf):
        raise FileNotFoundError(f"No such file or directory: {hubconf!r}")
    import importlib.util
    sys.path.insert(0, repo_or_dir)
    try:
        spec = importlib.util.spec_from_file_location("hubconf", hubconf)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if not isinstance(model, str):
            raise ValueError("Invalid input: model should be a string of function name")
        entry = getattr(module, model, None)
        if entry is None or not callable(entry):
            raise RuntimeError(f"Cannot find callable {model} in hubconf")
        return entry(*args, **kwargs)
    finally:
        sys.path.remove(repo_or_dir)
