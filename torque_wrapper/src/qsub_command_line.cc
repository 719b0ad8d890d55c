#include "qsub_command_line.h"

#include <algorithm>

namespace parastack::pbs {
namespace {

// Torque's qsub options that take a value, and those that do not (qsub(1), Torque 6). J is the
// array option of Slurm's qsub (slurm-wlm-torque), which also knows the words below.
constexpr std::string_view kValued = "aAbcCdDeFjJkKlLmMNopPqrStuvwW";
constexpr std::string_view kFlags = "fhInVxXz";

bool is_valued(char c) { return kValued.find(c) != std::string_view::npos; }
bool is_flag(char c) { return kFlags.find(c) != std::string_view::npos; }

// Records what pbs_parastack needs of one option. False: it is pbs_parastack's to carry out, not
// qsub's (-F: the script's arguments, given to it inside the job).
std::optional<std::string> note(char option, const std::string& value, QsubCommandLine& line, bool& for_qsub) {
  for_qsub = true;
  switch (option) {
    case 'I':
      line.interactive = true;
      break;
    case 'M':
      line.mail_users = value;
      break;
    case 'S': {
      // path[@host][,path[@host]...]: the first; a host-specific list is not worth more here.
      std::string path = value.substr(0, value.find(','));
      path = path.substr(0, path.find('@'));
      if (path.empty()) return "-S needs a path";
      line.shell = path;
      break;
    }
    case 'F': {
      auto words = split_words(value);
      if (!words) return "-F " + value + ": an unterminated quote";
      line.script_args = *words;
      for_qsub = false;
      break;
    }
    case 'C':
      if (value.empty()) return "-C needs a directive prefix";
      line.directive_prefix = value;
      break;
    default:
      break;
  }
  return std::nullopt;
}

// One getopt-style argument at args[i] ("-Vl nodes=1", "-lnodes=1", "-h"); advances i past its
// value. `emit` receives each option in normalised form ("-l", "nodes=1").
template <typename Emit>
std::optional<std::string> parse_option(const std::vector<std::string>& args, std::size_t& i, QsubCommandLine& line,
                                        Emit emit) {
  const std::string& arg = args[i];
  // Slurm's qsub reads a few whole words (Getopt::Long); Torque's would read -w d.
  if (arg == "-cwd" || arg == "-sbatchline") {
    emit(std::vector<std::string>{arg});
    return std::nullopt;
  }
  if (arg == "-wd" || arg == "-pe") {
    const std::size_t values = arg == "-wd" ? 1 : 2;
    if (i + values >= args.size()) return arg + " needs " + (values == 1 ? "a value" : "two values");
    std::vector<std::string> words{arg};
    for (std::size_t v = 0; v < values; ++v) words.push_back(args[++i]);
    emit(words);
    return std::nullopt;
  }
  for (std::size_t j = 1; j < arg.size(); ++j) {
    const char c = arg[j];
    bool for_qsub = true;
    if (is_flag(c)) {
      if (auto error = note(c, {}, line, for_qsub)) return error;
      emit(std::vector<std::string>{std::string("-") + c});
      continue;
    }
    if (!is_valued(c)) return std::string("unknown qsub option -") + c + (arg.size() > 2 ? " (in " + arg + ")" : "");
    std::string value;
    if (j + 1 < arg.size()) {
      value = arg.substr(j + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return std::string("option -") + c + " needs a value";
    }
    if (auto error = note(c, value, line, for_qsub)) return error;
    if (for_qsub) emit(std::vector<std::string>{std::string("-") + c, value});
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::variant<QsubCommandLine, std::string> parse_command_line(const std::vector<std::string>& args) {
  QsubCommandLine line;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (line.script) {
      return "'" + arg + "' after the script: qsub options go before it, parastack options after -- (" + *line.script +
             " -- --alpha=0.001)";
    }
    if (arg == "--help") {
      line.help = true;
    } else if (arg == "--version") {
      line.version = true;
    } else if (arg.starts_with("--")) {
      return "unknown option " + arg + " (parastack options go after the script and --: pbs_parastack job.sh -- " +
             arg + ")";
    } else if (arg.size() > 1 && arg[0] == '-') {
      auto error = parse_option(args, i, line, [&](const std::vector<std::string>& words) {
        line.qsub_args.insert(line.qsub_args.end(), words.begin(), words.end());
      });
      if (error) return *error;
    } else {
      if (arg.empty()) return "an empty script name";
      line.script = arg;
    }
  }
  line.parastack_args.assign(args.begin() + static_cast<std::ptrdiff_t>(std::min(i, args.size())), args.end());
  return line;
}

std::optional<std::string> apply_directives(const std::vector<std::string>& directives, QsubCommandLine& line) {
  // What the command line set stays; the directives only fill in.
  QsubCommandLine from_script;
  for (const auto& directive : directives) {
    auto words = split_words(directive);
    if (!words) return "directive '" + directive + "': an unterminated quote";
    for (std::size_t i = 0; i < words->size(); ++i) {
      const std::string& word = (*words)[i];
      if (word.empty() || word[0] != '-' || word.size() == 1) break;  // Torque stops at a non-option word too
      if (auto error = parse_option(*words, i, from_script, [](const std::vector<std::string>&) {})) {
        return "directive '" + directive + "': " + *error;
      }
    }
  }
  line.interactive = line.interactive || from_script.interactive;
  if (line.mail_users.empty()) line.mail_users = from_script.mail_users;
  if (!line.shell) line.shell = from_script.shell;
  if (line.script_args.empty()) line.script_args = from_script.script_args;
  return std::nullopt;
}

std::optional<std::vector<std::string>> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < text.size() && (text[i + 1] == '"' || text[i + 1] == '\\')) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote) return std::nullopt;
  if (in_word) words.push_back(word);
  return words;
}

}  // namespace parastack::pbs
