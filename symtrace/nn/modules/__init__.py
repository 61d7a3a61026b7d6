"""symtrace.nn.modules: the layer classes (torch.nn's names)."""
from .module import Module  # noqa: F401
from .linear import Linear, Identity  # noqa: F401
from .sparse import Embedding  # noqa: F401
from .normalization import LayerNorm  # noqa: F401
from .dropout import Dropout  # noqa: F401
from .activation import ReLU, GELU, Tanh, Sigmoid, Softmax, LogSoftmax, MultiheadAttention  # noqa: F401
from .container import Sequential, ModuleList, ModuleDict  # noqa: F401
from .loss import CrossEntropyLoss, MSELoss  # noqa: F401
from .transformer import TransformerEncoderLayer, TransformerEncoder  # noqa: F401
