"""symtrace.utils._pytree: nested Python containers of leaves, as torch.utils._pytree,
for symtrace.func (vmap's in_dims / out_dims, the structures of grad / vjp / jacrev).

Containers are tuple, list, dict, OrderedDict and namedtuples; everything else
(tensors, numbers, None) is a leaf. A TreeSpec prints as torch's does
(``TreeSpec(tuple, None, [*, *])``) so that error messages read the same."""
from collections import OrderedDict

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_map",
           "tree_structure", "treespec_pprint"]


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _node_kind(x):
    """(type tag, context, children) of a container, or None for a leaf."""
    if _is_namedtuple(x):
        return "namedtuple", type(x), list(x)
    t = type(x)
    if t is tuple or t is list:
        return t, None, list(x)
    if t is dict or t is OrderedDict:
        keys = list(x.keys())
        return t, keys, [x[k] for k in keys]
    return None


class TreeSpec:
    """The structure of a tree: a container type, its context (dict keys, the
    namedtuple class) and its children's specs."""

    def __init__(self, type_, context, children):
        self.type = type_
        self._context = context
        self._children = list(children)
        self.num_leaves = sum(c.num_leaves for c in self._children)

    @property
    def num_children(self):
        return len(self._children)

    def is_leaf(self):
        return False

    def _type_name(self):
        return self.type if isinstance(self.type, str) else self.type.__name__

    def __repr__(self, indent=0):
        prefix = f"TreeSpec({self._type_name()}, {self._context}, ["
        body = ""
        if self._children:
            indent += 2
            body += self._children[0].__repr__(indent)
            body += "," if len(self._children) > 1 else ""
            body += ",".join("\n" + " " * indent + c.__repr__(indent) for c in self._children[1:])
        return prefix + body + "])"

    def __eq__(self, other):
        if not isinstance(other, TreeSpec) or other.is_leaf():
            return False
        return (self.type == other.type and self._context == other._context
                and self._children == other._children)

    def __ne__(self, other):
        return not self == other

    __hash__ = None


class LeafSpec(TreeSpec):
    def __init__(self):
        self.type = None
        self._context = None
        self._children = []
        self.num_leaves = 1

    def is_leaf(self):
        return True

    def __repr__(self, indent=0):
        return "*"

    def __eq__(self, other):
        return isinstance(other, LeafSpec)


_LEAF = LeafSpec()


def tree_flatten(tree):
    """(leaves in order, TreeSpec)."""
    leaves = []

    def go(x):
        kind = _node_kind(x)
        if kind is None:
            leaves.append(x)
            return _LEAF
        t, ctx, children = kind
        return TreeSpec(t, ctx, [go(c) for c in children])

    spec = go(tree)
    return leaves, spec


def tree_leaves(tree):
    return tree_flatten(tree)[0]


def tree_structure(tree):
    return tree_flatten(tree)[1]


def tree_unflatten(leaves, spec):
    """The tree of spec's structure holding leaves."""
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the "
                         f"spec refers to a pytree that holds {spec.num_leaves} items ({spec}).")
    it = iter(leaves)

    def go(s):
        if s.is_leaf():
            return next(it)
        children = [go(c) for c in s._children]
        if s.type == "namedtuple":
            return s._context(*children)
        if s.type is tuple:
            return tuple(children)
        if s.type is list:
            return children
        return s.type(zip(s._context, children))

    return go(spec)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def treespec_pprint(spec):
    """The structure with a * per leaf, as torch's treespec_pprint."""
    class _Star:
        def __repr__(self):
            return "*"
    return repr(tree_unflatten([_Star()] * spec.num_leaves, spec))


def _broadcast_to_and_flatten(prefix, spec):
    """prefix (a tree whose leaves stand for whole subtrees of spec) expanded to one
    value per leaf of spec, or None when the structures do not match."""
    out = []

    def go(p, s):
        if s.is_leaf():
            if _node_kind(p) is not None:
                return False
            out.append(p)
            return True
        kind = _node_kind(p)
        if kind is None:
            out.extend([p] * s.num_leaves)
            return True
        t, ctx, children = kind
        if t != s.type or len(children) != len(s._children):
            return False
        if t == "namedtuple" and ctx is not s._context:
            return False
        if ctx is not None and t != "namedtuple":   # dicts: the same keys, in spec's order
            if set(ctx) != set(s._context):
                return False
            children = [p[k] for k in s._context]
        return all(go(c, cs) for c, cs in zip(children, s._children))

    return out if go(prefix, spec) else None
