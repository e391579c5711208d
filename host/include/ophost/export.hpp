// OPHOST_API marks what libophost exports. The library is compiled with -fvisibility=hidden and
// -fvisibility-inlines-hidden, so everything else (the layers' internals) stays inside it; the public headers
// in this folder are the only ones whose declarations carry the mark (tests/layers checks `nm -D`).
#pragma once

#define OPHOST_API __attribute__((visibility("default")))

// For the definitions of the public classes' private Impl structs (inside the library): a nested class takes
// its enclosing class's visibility, so without this the internals would be exported with the class.
#define OPHOST_LOCAL __attribute__((visibility("hidden")))
