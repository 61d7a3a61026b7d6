"""symtrace.layout and its two values, symtrace.strided (every Tensor) and
symtrace.sparse_coo (symtrace.sparse.SparseCOOTensor), as torch.layout's; compared by
identity (as memory_format; compiled code guards them by identity, as dtypes)."""


class _Named:
    """A named constant of the symtrace module (layout, memory_format): shown and
    pickled as the module attribute of that name."""
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"symtrace.{self._name}"

    def __reduce__(self):
        return self._name     # pickles as the module attribute of that name


class layout(_Named):
    """How a tensor's elements are stored; compare with symtrace.strided / symtrace.sparse_coo."""
    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")
