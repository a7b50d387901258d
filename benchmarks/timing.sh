# Sourced by the benchmark scripts that time whole commands; they set
# $work (a scratch directory) first.
#   run NAME CMD...   runs CMD (its stderr shown and the script ended if it
#                     fails), appends its wall time in ns to $work/NAME;
#                     a line "loop_ns N" it prints (a program timing its
#                     own steady-state loop) appends N to $work/NAME.loop
#   median FILE       the median of the numbers in FILE
#   ratio A B         A / B with three decimals
now() { date +%s%N; }
run() {
  local name=$1; shift
  local t0 t1
  t0=$(now); "$@" >"$work/last.out" 2>"$work/last.err" || { cat "$work/last.err" >&2; exit 1; }; t1=$(now)
  echo $((t1 - t0)) >>"$work/$name"
  sed -n 's/^loop_ns \([0-9]*\)$/\1/p' "$work/last.out" >>"$work/$name.loop"
}
median() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
