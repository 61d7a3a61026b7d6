"""symtrace.nn: layers come with the autograd issue; functional is here."""
from . import functional  # noqa: F401
