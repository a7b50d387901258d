#include "function_names.h"

#include <vector>

#include "table.h"

namespace hybridprof::report {
namespace {

// Where `name`'s argument list opens: the first '(' outside template
// brackets that is not part of "operator()"; npos when there is none.
size_t argument_list(const std::string& name) {
  int angle = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<') ++angle;
    if (c == '>' && angle > 0) --angle;
    if (c != '(' || angle != 0) continue;
    if (i >= 8 && name.compare(i - 8, 8, "operator") == 0 && name.compare(i, 2, "()") == 0) {
      ++i;  // operator() itself: its argument list comes next
      continue;
    }
    return i;
  }
  return std::string::npos;
}

// The matching ')' of the '(' at `open`; npos when unmatched.
size_t closing(const std::string& name, size_t open) {
  int depth = 0;
  for (size_t i = open; i < name.size(); ++i) {
    if (name[i] == '(') ++depth;
    if (name[i] == ')' && --depth == 0) return i;
  }
  return std::string::npos;
}

// The arguments of "(a, b<c, d>, e)" at top level, without the parentheses.
std::vector<std::string> split_arguments(const std::string& inside) {
  std::vector<std::string> args;
  int depth = 0;
  std::string current;
  for (char c : inside) {
    if (c == '<' || c == '(' || c == '[') ++depth;
    if ((c == '>' || c == ')' || c == ']') && depth > 0) --depth;
    if (c == ',' && depth == 0) {
      args.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  args.push_back(current);
  for (std::string& a : args) a.erase(0, a.find_first_not_of(' '));
  return args;
}

// "(first, second, …, last)" in at most `width` characters: arguments from
// both ends, the first ones first, as many as fit whole; "(…)" at least.
std::string shorten_arguments(const std::vector<std::string>& args, size_t width) {
  std::vector<std::string> front, back;
  size_t used = 2;  // the parentheses
  for (size_t lo = 0, hi = args.size(); lo < hi;) {
    const bool take_front = front.size() <= back.size();
    const std::string& next = take_front ? args[lo] : args[hi - 1];
    // What it adds: itself and its ", ", and room for ", …" while any stays out.
    const size_t remaining_after = hi - lo - 1;
    const size_t cost = display_width(next) + ((front.size() + back.size()) ? 2 : 0);
    if (used + cost + (remaining_after ? 3 : 0) > width) break;
    used += cost;
    (take_front ? front : back).push_back(next);
    take_front ? ++lo : --hi;
  }
  std::string out = "(";
  for (size_t i = 0; i < front.size(); ++i) out += (i ? ", " : "") + front[i];
  if (front.size() + back.size() < args.size()) out += std::string(front.empty() ? "" : ", ") + "…";
  for (size_t i = back.size(); i-- > 0;) out += ", " + back[i];
  return out + ")";
}

// The qualified name `head` in at most `width` characters: its last
// component whole, "…::" before it when anything is left out.
std::string shorten_qualifiers(const std::string& head, size_t width) {
  if (display_width(head) <= width) return head;
  int angle = 0;
  size_t last = std::string::npos;  // after the last "::" outside templates
  for (size_t i = 0; i + 1 < head.size(); ++i) {
    if (head[i] == '<') ++angle;
    if (head[i] == '>' && angle > 0) --angle;
    if (angle == 0 && head[i] == ':' && head[i + 1] == ':') last = i + 2;
  }
  if (last == std::string::npos) return truncate_display(head, width);
  const std::string own = head.substr(last);
  if (display_width(own) + 3 > width) return truncate_display(own, width);
  // As much of the front as fits, then "…::" and the function's own name.
  return truncate_display(head.substr(0, last), width - display_width(own) - 2).append("::") + own;
}

}  // namespace

std::string shorten_function_name(const std::string& name, size_t width) {
  if (width == 0 || display_width(name) <= width) return name;
  const size_t open = argument_list(name);
  const size_t close = open == std::string::npos ? std::string::npos : closing(name, open);
  if (close == std::string::npos) return truncate_display(name, width);
  const std::string head = name.substr(0, open), tail = name.substr(close + 1);
  const std::vector<std::string> args = split_arguments(name.substr(open + 1, close - open - 1));
  // The arguments give way first, down to "(…)"; then the qualifiers.
  const size_t fixed = display_width(head) + display_width(tail);
  if (fixed + 3 <= width) return head + shorten_arguments(args, width - fixed) + tail;
  const size_t room = width > display_width(tail) + 3 ? width - display_width(tail) - 3 : 1;
  const std::string short_head = shorten_qualifiers(head, room);
  const std::string shortened = short_head + "(…)" + tail;
  return display_width(shortened) <= width ? shortened : truncate_display(shortened, width);
}

}  // namespace hybridprof::report
