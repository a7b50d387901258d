// A library for the loader-snapshot test to load and unload.
extern "C" int unload_me_answer() { return 42; }
