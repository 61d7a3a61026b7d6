"""Dropout and its channel (Dropout1d/2d/3d) and SELU (AlphaDropout,
FeatureAlphaDropout) forms, as torch.nn: identity in eval mode; inplace=True
writes into the input and returns it."""
from .. import functional as F
from .module import Module


class _DropoutNd(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    # as torch's: inplace is stored and printed, the forward is out of place
    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    # as torch's: inplace is stored and printed, the forward is out of place
    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
