"""symtrace.nn.modules: the layer classes (torch.nn's names)."""
from .module import Module  # noqa: F401
from .linear import Linear, Bilinear, Identity  # noqa: F401
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .normalization import LayerNorm, RMSNorm, GroupNorm  # noqa: F401
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d, AlphaDropout, FeatureAlphaDropout  # noqa: F401
from .activation import (ReLU, GELU, Tanh, Sigmoid, Softmax, LogSoftmax, MultiheadAttention,  # noqa: F401
                         SiLU, Mish, SELU, CELU, ELU, Softplus, LeakyReLU, Threshold, Hardtanh, ReLU6,
                         Hardsigmoid, Hardswish, GLU, LogSigmoid, Softsign, Tanhshrink, Softmin, RReLU,
                         Hardshrink, Softshrink, PReLU)
from .container import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict  # noqa: F401
from .loss import (CrossEntropyLoss, MSELoss, NLLLoss, L1Loss, SmoothL1Loss, HuberLoss, BCELoss,  # noqa: F401
                   BCEWithLogitsLoss, KLDivLoss, CosineEmbeddingLoss, MarginRankingLoss, HingeEmbeddingLoss,
                   SoftMarginLoss, MultiLabelSoftMarginLoss, MultiLabelMarginLoss, MultiMarginLoss,
                   GaussianNLLLoss, PoissonNLLLoss, TripletMarginLoss, TripletMarginWithDistanceLoss)
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .transformer import TransformerEncoderLayer, TransformerEncoder  # noqa: F401
from .conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,
                   Fold, Unfold)  # noqa: F401
from .pooling import (MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d, AdaptiveAvgPool1d, AdaptiveAvgPool2d,  # noqa: F401
                      AdaptiveMaxPool1d, AdaptiveMaxPool2d)
from .batchnorm import BatchNorm1d, BatchNorm2d, InstanceNorm1d, InstanceNorm2d  # noqa: F401
from .pixelshuffle import (PixelShuffle, PixelUnshuffle, Upsample, UpsamplingNearest2d,  # noqa: F401
                           UpsamplingBilinear2d)
