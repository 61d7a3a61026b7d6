"""symtrace.nn.modules: the layer classes (torch.nn's names)."""
from .module import Module  # noqa: F401
from .linear import Linear, Bilinear, Identity  # noqa: F401
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .normalization import LayerNorm, RMSNorm, GroupNorm, LocalResponseNorm  # noqa: F401
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d, AlphaDropout, FeatureAlphaDropout  # noqa: F401
from .activation import (ReLU, GELU, Tanh, Sigmoid, Softmax, LogSoftmax, MultiheadAttention,  # noqa: F401
                         SiLU, Mish, SELU, CELU, ELU, Softplus, LeakyReLU, Threshold, Hardtanh, ReLU6,
                         Hardsigmoid, Hardswish, GLU, LogSigmoid, Softsign, Tanhshrink, Softmin, RReLU,
                         Softmax2d, Hardshrink, Softshrink, PReLU)
from .container import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict  # noqa: F401
from .loss import (CrossEntropyLoss, MSELoss, NLLLoss, L1Loss, SmoothL1Loss, HuberLoss, BCELoss,  # noqa: F401
                   BCEWithLogitsLoss, KLDivLoss, CosineEmbeddingLoss, MarginRankingLoss, HingeEmbeddingLoss,
                   SoftMarginLoss, MultiLabelSoftMarginLoss, MultiLabelMarginLoss, MultiMarginLoss,
                   GaussianNLLLoss, PoissonNLLLoss, TripletMarginLoss, TripletMarginWithDistanceLoss, CTCLoss)
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .transformer import (Transformer, TransformerEncoderLayer, TransformerEncoder,  # noqa: F401
                          TransformerDecoderLayer, TransformerDecoder)
from .conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,
                   Fold, Unfold)  # noqa: F401
from .pooling import (MaxPool1d, MaxPool2d, MaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d,  # noqa: F401
                      AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
                      AdaptiveMaxPool3d, LPPool1d, LPPool2d, LPPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d,
                      FractionalMaxPool2d, FractionalMaxPool3d)
from .batchnorm import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d,  # noqa: F401
                        InstanceNorm3d, SyncBatchNorm)
from .pixelshuffle import (PixelShuffle, PixelUnshuffle, ChannelShuffle, Upsample,  # noqa: F401
                           UpsamplingNearest2d, UpsamplingBilinear2d)
from .padding import (ConstantPad1d, ConstantPad2d, ConstantPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d,  # noqa: F401
                      ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
                      ReplicationPad3d, CircularPad1d, CircularPad2d, CircularPad3d)
from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: F401
from .lazy import (LazyModuleMixin, LazyLinear, LazyConv1d, LazyConv2d, LazyConv3d,  # noqa: F401
                   LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyBatchNorm1d,
                   LazyBatchNorm2d, LazyBatchNorm3d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d)
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
