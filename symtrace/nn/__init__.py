"""symtrace.nn: layers (Module and its subclasses, torch.nn's names),
Parameter, init, functional and utils."""
from . import functional  # noqa: F401
from . import init  # noqa: F401
from .parameter import Parameter, Buffer, UninitializedParameter, UninitializedBuffer  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import (Module, Linear, Identity, Embedding, LayerNorm, Dropout, ReLU, GELU, Tanh,  # noqa: F401
                      Sigmoid, Softmax, LogSoftmax, MultiheadAttention, Sequential, ModuleList, ModuleDict,
                      CrossEntropyLoss, MSELoss, TransformerEncoderLayer, TransformerEncoder,
                      Transformer, TransformerDecoderLayer, TransformerDecoder,
                      SiLU, Mish, SELU, CELU, ELU, Softplus, LeakyReLU, Threshold, Hardtanh, ReLU6, Hardsigmoid,
                      Hardswish, GLU, LogSigmoid, Softsign, Tanhshrink, Softmin, NLLLoss, L1Loss, SmoothL1Loss,
                      HuberLoss, BCELoss, BCEWithLogitsLoss, KLDivLoss, CosineEmbeddingLoss, CosineSimilarity,
                      PairwiseDistance, Flatten, Unflatten, RMSNorm, GroupNorm, ParameterList, ParameterDict,
                      RReLU, Dropout1d, Dropout2d, Dropout3d, AlphaDropout, FeatureAlphaDropout)
from .modules import (Hardshrink, Softshrink, PReLU, Bilinear, EmbeddingBag, MarginRankingLoss,  # noqa: F401
                      HingeEmbeddingLoss, SoftMarginLoss, MultiLabelSoftMarginLoss, MultiLabelMarginLoss,
                      MultiMarginLoss, GaussianNLLLoss, PoissonNLLLoss, TripletMarginLoss,
                      TripletMarginWithDistanceLoss)
from .modules import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,  # noqa: F401
                      Fold, Unfold, MaxPool1d,
                      MaxPool2d, AvgPool1d, AvgPool2d, AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d,
                      AdaptiveMaxPool2d, BatchNorm1d, BatchNorm2d, InstanceNorm1d, InstanceNorm2d, PixelShuffle,
                      PixelUnshuffle, Upsample, UpsamplingNearest2d, UpsamplingBilinear2d)
from .modules import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: F401
from .modules import (MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool3d, LPPool1d,  # noqa: F401
                      LPPool2d, LPPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d, BatchNorm3d, InstanceNorm3d,
                      ConstantPad1d, ConstantPad2d, ConstantPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d, ReflectionPad1d,
                      ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d,
                      CircularPad1d, CircularPad2d, CircularPad3d, LocalResponseNorm, ChannelShuffle, Softmax2d,
                      SyncBatchNorm)
from .modules import (LazyLinear, LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,  # noqa: F401
                      LazyConvTranspose2d, LazyConvTranspose3d, LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d,
                      LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d)
from . import parameter  # noqa: F401
from . import utils  # noqa: F401
from . import parallel  # noqa: F401,E402  (nn.parallel: DistributedDataParallel, DataParallel)
from .parallel import DataParallel  # noqa: F401,E402
from ._linear_ce import LinearCrossEntropyLoss, LinearCrossEntropyOptions  # noqa: F401,E402
