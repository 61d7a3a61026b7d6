"""symtrace.layout and its two values, symtrace.strided (every Tensor) and
symtrace.sparse_coo (symtrace.sparse.SparseCOOTensor), as torch.layout's; compared by
identity (as memory_format: a comparison inside a compiled function breaks the graph)."""


class layout:
    """How a tensor's elements are stored; compare with symtrace.strided / symtrace.sparse_coo."""
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"symtrace.{self._name}"

    def __reduce__(self):
        return self._name     # pickles as the module attribute of that name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
