"""The numerics of weight compression, apart from the IR: k-means
palettization (`kmeans`) and linear int8/int4 quantization (`linear`) of
numpy tensors, grouped the way MIL's iOS18 constexpr ops decompress them.
`mil-compress-weights` (`xdsl_ane.passes.compress_weights`) puts the results
into the program."""

from xdsl_ane.passes.compression.kmeans import Palettized, palettize
from xdsl_ane.passes.compression.linear import LinearQuantized, quantize_linear

__all__ = ["LinearQuantized", "Palettized", "palettize", "quantize_linear"]
