/* A helper library the missing-dependency fake plugin links to. It is built into a folder that is not on the
 * dynamic loader's search path and the plugin has no RPATH, so dlopen of the plugin fails naming this .so. */
__attribute__((visibility("default"))) int fake_helper_value(void) { return 42; }
