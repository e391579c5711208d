// ophost-pack-worker: runs the kernels of one isolated operator pack for the host (SessionOptions::isolate_packs,
// `ophost run --isolate-packs`). Started by libophost only; everything it does is in host/isolation/worker.cpp.
#include "exec/isolation_worker.hpp"

int main(int argc, char** argv) { return ophost::run_pack_worker(argc, argv); }
