// The worker side of pack isolation (SessionOptions::isolate_packs; docs/security.md): the `ophost-pack-worker`
// executable (tools/pack-worker) is this function. It is started by the host with posix_spawn, loads ONE operator
// pack through the loader's verified path (the manifest; the plugin root's ownership walk; the library opened
// once, its sha256 taken from that descriptor and compared with the manifest's and with the one the host loaded;
// dlopen of that very file), then serves the host's requests (isolation/protocol.hpp) on descriptor 3, with the
// tensors in the shared memory of descriptor 4, until the host closes the socket.
//
//   ophost-pack-worker --pack NAME --manifest PATH --sha256 HEX --threads N --host-pid PID
//                      [--log-level LEVEL] [--insecure-plugin-path]
#pragma once

namespace ophost {

// Returns the process's exit status (0 when the host closed the socket; 2 for bad arguments; 3 when the pack
// could not be loaded, after telling the host why).
int run_pack_worker(int argc, char** argv) noexcept;

}  // namespace ophost
