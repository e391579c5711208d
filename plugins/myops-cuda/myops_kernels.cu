// CUDA build of the myops kernels (the source is shared with the HIP pack).
#include "myops_kernels.inc"
