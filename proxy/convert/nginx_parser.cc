#include "convert/nginx_parser.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <glob.h>
#include <memory>
#include <sstream>

namespace portico::convert {

namespace {

// Bounds that no real configuration reaches, so that hostile input costs bounded work.
constexpr int kMaxDepth = 32;        // nested blocks
constexpr int kMaxIncludeDepth = 16; // include within include
constexpr size_t kMaxDirectives = 1'000'000;
constexpr size_t kMaxIncludedFiles = 4096; // in all: a file may be included many times

class Parser {
public:
  Parser(const FileReader& read, const GlobExpander& expand, std::string base_dir, NginxConfig* out)
      : read_(read), expand_(expand), base_dir_(std::move(base_dir)), out_(out) {}

  // Parses text into out; false after an error (recorded).
  bool parse(std::string_view text, const std::string& file, std::vector<Directive>* out,
             int include_depth) {
    Source src{text, file, 0, 1, 1};
    return block(src, out, 0, include_depth, false);
  }

private:
  struct Source {
    std::string_view text;
    const std::string& file;
    size_t pos;
    int line, col;
  };
  enum class Token { Word, Semicolon, Open, Close, End };

  bool error(const Source& s, int line, int col, const std::string& msg) {
    out_->errors.push_back(s.file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " +
                           msg);
    return false;
  }

  void advance(Source& s) {
    if (s.text[s.pos] == '\n') {
      ++s.line;
      s.col = 1;
    } else {
      ++s.col;
    }
    ++s.pos;
  }

  // The character after a backslash, in quotes or not, as nginx reads it: \" \' \\ \t \r \n
  // are unescaped, any other backslash stays (\. in a regex).
  static void escaped(char e, std::string* word) {
    switch (e) {
    case '"':
    case '\'':
    case '\\': word->push_back(e); break;
    case 'n': word->push_back('\n'); break;
    case 'r': word->push_back('\r'); break;
    case 't': word->push_back('\t'); break;
    default: word->push_back('\\'); word->push_back(e);
    }
  }

  // The next token; a word's text in *word. Errors (an unclosed quote) are recorded.
  std::optional<Token> next(Source& s, std::string* word, int* line, int* col) {
    for (;;) {
      while (s.pos < s.text.size() && std::strchr(" \t\r\n", s.text[s.pos]))
        advance(s);
      if (s.pos < s.text.size() && s.text[s.pos] == '#') {
        while (s.pos < s.text.size() && s.text[s.pos] != '\n')
          advance(s);
        continue;
      }
      break;
    }
    *line = s.line;
    *col = s.col;
    if (s.pos >= s.text.size())
      return Token::End;
    char c = s.text[s.pos];
    if (c == ';' || c == '{' || c == '}') {
      advance(s);
      return c == ';' ? Token::Semicolon : c == '{' ? Token::Open : Token::Close;
    }
    word->clear();
    if (c == '"' || c == '\'') {
      advance(s);
      while (s.pos < s.text.size() && s.text[s.pos] != c) {
        if (s.text[s.pos] == '\\' && s.pos + 1 < s.text.size()) {
          advance(s);
          escaped(s.text[s.pos], word);
        } else {
          word->push_back(s.text[s.pos]);
        }
        advance(s);
      }
      if (s.pos >= s.text.size()) {
        error(s, *line, *col, "unclosed quote");
        return std::nullopt;
      }
      advance(s); // the closing quote
      if (s.pos < s.text.size() && !std::strchr(" \t\r\n;{}", s.text[s.pos])) {
        error(s, s.line, s.col, "unexpected character after a quoted word");
        return std::nullopt;
      }
      return Token::Word;
    }
    while (s.pos < s.text.size() && !std::strchr(" \t\r\n;{}", s.text[s.pos])) {
      if (s.text[s.pos] == '\\' && s.pos + 1 < s.text.size()) {
        // The escaped character may be one that would end the word.
        advance(s);
        escaped(s.text[s.pos], word);
      } else if (s.text[s.pos] == '$' && s.pos + 1 < s.text.size() && s.text[s.pos + 1] == '{') {
        // ${name}: a variable; its braces are not a block.
        while (s.pos < s.text.size() && s.text[s.pos] != '}') {
          word->push_back(s.text[s.pos]);
          advance(s);
        }
        if (s.pos >= s.text.size()) {
          error(s, *line, *col, "unclosed ${");
          return std::nullopt;
        }
        word->push_back('}');
      } else {
        word->push_back(s.text[s.pos]);
      }
      advance(s);
    }
    return Token::Word;
  }

  bool block(Source& s, std::vector<Directive>* out, int depth, int include_depth,
             bool closed_by_brace) {
    if (depth > kMaxDepth)
      return error(s, s.line, s.col, "blocks nested deeper than " + std::to_string(kMaxDepth));
    Directive d;
    bool in_directive = false;
    std::string word;
    for (;;) {
      int line = 0, col = 0;
      std::optional<Token> t = next(s, &word, &line, &col);
      if (!t)
        return false;
      switch (*t) {
      case Token::Word:
        if (!in_directive) {
          d = Directive{};
          d.name = word;
          d.file = s.file;
          d.line = line;
          in_directive = true;
        } else {
          d.args.push_back(word);
        }
        break;
      case Token::Semicolon:
        if (!in_directive)
          return error(s, line, col, "unexpected \";\"");
        in_directive = false;
        if (d.name == "include") {
          if (!include(s, d, out, include_depth))
            return false;
        } else if (!add(s, line, col, std::move(d), out)) {
          return false;
        }
        break;
      case Token::Open:
        if (!in_directive)
          return error(s, line, col, "unexpected \"{\"");
        in_directive = false;
        d.has_block = true;
        if (!block(s, &d.block, depth + 1, include_depth, true))
          return false;
        if (!add(s, line, col, std::move(d), out))
          return false;
        break;
      case Token::Close:
        if (in_directive)
          return error(s, line, col, "unexpected \"}\": \"" + d.name + "\" has no \";\"");
        if (!closed_by_brace)
          return error(s, line, col, "unexpected \"}\"");
        return true;
      case Token::End:
        if (in_directive)
          return error(s, line, col, "unexpected end of file: \"" + d.name + "\" has no \";\"");
        if (closed_by_brace)
          return error(s, line, col, "unexpected end of file, expecting \"}\"");
        return true;
      }
    }
  }

  bool add(Source& s, int line, int col, Directive d, std::vector<Directive>* out) {
    if (++count_ > kMaxDirectives)
      return error(s, line, col, "more than a million directives");
    out->push_back(std::move(d));
    return true;
  }

  bool include(Source& s, const Directive& d, std::vector<Directive>* out, int include_depth) {
    if (d.args.size() != 1)
      return error(s, d.line, 1, "\"include\" takes one path");
    if (include_depth >= kMaxIncludeDepth)
      return error(s, d.line, 1,
                   "includes nested deeper than " + std::to_string(kMaxIncludeDepth) +
                       " (a loop?)");
    std::string pattern = d.args[0];
    if (!pattern.empty() && pattern[0] != '/')
      pattern = base_dir_ + pattern;
    bool wildcard = pattern.find_first_of("*?[") != std::string::npos;
    std::vector<std::string> paths = expand_(pattern);
    if (paths.empty() && !wildcard)
      return error(s, d.line, 1, "include \"" + pattern + "\": no such file");
    for (const auto& path : paths) {
      if (++included_files_ > kMaxIncludedFiles)
        return error(s, d.line, 1,
                     "more than " + std::to_string(kMaxIncludedFiles) + " files included");
      std::string why;
      std::optional<std::string> text = read_(path, &why);
      if (!text)
        return error(s, d.line, 1, "include \"" + path + "\": " + why);
      included_.push_back(path); // the Source below refers to its name while parsing
      Source inner{*text, included_.back(), 0, 1, 1};
      if (!block(inner, out, 0, include_depth + 1, false))
        return false;
    }
    return true;
  }

  const FileReader& read_;
  const GlobExpander& expand_;
  std::string base_dir_;
  NginxConfig* out_;
  size_t count_ = 0;
  size_t included_files_ = 0;
  // Stable addresses for file names while their text is parsed.
  struct Names {
    std::vector<std::unique_ptr<std::string>> v;
    void push_back(const std::string& s) { v.push_back(std::make_unique<std::string>(s)); }
    const std::string& back() const { return *v.back(); }
  } included_;
};

std::string directory_of(const std::string& file) {
  auto slash = file.rfind('/');
  return slash == std::string::npos ? std::string() : file.substr(0, slash + 1);
}

} // namespace

NginxConfig parse_nginx(std::string_view text, const std::string& file, const FileReader& read,
                        const GlobExpander& expand) {
  NginxConfig out;
  Parser p(read, expand, directory_of(file), &out);
  if (!p.parse(text, file, &out.directives, 0))
    out.directives.clear();
  return out;
}

NginxConfig parse_nginx_file(const std::string& path) {
  FileReader read = [](const std::string& p, std::string* why) -> std::optional<std::string> {
    std::ifstream f(p, std::ios::binary);
    if (!f) {
      *why = std::strerror(errno);
      return std::nullopt;
    }
    std::ostringstream o;
    o << f.rdbuf();
    return o.str();
  };
  GlobExpander expand = [](const std::string& pattern) {
    std::vector<std::string> out;
    glob_t g{};
    if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i)
        out.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    return out;
  };
  std::string why;
  std::optional<std::string> text = read(path, &why);
  if (!text) {
    NginxConfig out;
    out.errors.push_back(path + ": " + why);
    return out;
  }
  return parse_nginx(*text, path, read, expand);
}

} // namespace portico::convert
