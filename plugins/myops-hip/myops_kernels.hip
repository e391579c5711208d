// HIP build of the myops kernels (the source is shared with the CUDA pack, plugins/myops-cuda).
#include "myops_kernels.inc"
