/* A library the unwinder test loads after the loader snapshot was taken.
 * late_call's frame has no frame pointer and locals on the stack: only its
 * unwind table says where its caller's frame is, so an unwinder that has
 * not found the table can only guess (and guesses wrong). */
__attribute__((noinline, visibility("default"))) int late_call(void (*fn)(void)) {
  volatile char pad[200];
  pad[0] = 1;
  pad[199] = 2;
  fn();
  return pad[0] + pad[199];
}
