//===- json.cpp - the little JSON the checkpoint format needs -------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "core/json.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace txrt {
namespace json {

const Value *Value::find(const std::string &key) const {
  if (kind != Kind::Object)
    return nullptr;
  for (const auto &[k, v] : object)
    if (k == key)
      return &v;
  return nullptr;
}

bool Value::isInteger() const {
  if (kind != Kind::Number || text.empty())
    return false;
  for (size_t i = 0; i < text.size(); ++i)
    if (!(std::isdigit(static_cast<unsigned char>(text[i])) || (i == 0 && text[i] == '-')))
      return false;
  return true;
}

bool Value::asInt64(int64_t &out) const {
  if (!isInteger())
    return false;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno || *end)
    return false;
  out = v;
  return true;
}

bool Value::asUint64(uint64_t &out) const {
  if (!isInteger() || text[0] == '-')
    return false;
  errno = 0;
  char *end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno || *end)
    return false;
  out = v;
  return true;
}

namespace {

struct Parser {
  const std::string &s;
  size_t pos = 0;
  int depth = 0;

  Status fail(const std::string &what) {
    return Status::invalid("invalid JSON at byte " + std::to_string(pos) + ": " + what);
  }
  void skipSpace() {
    while (pos < s.size() &&
           (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }
  bool literal(const char *word) {
    size_t n = std::char_traits<char>::length(word);
    if (s.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }
  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  Status hex4(uint32_t &out) {
    if (pos + 4 > s.size())
      return fail("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s[pos++];
      out <<= 4;
      if (c >= '0' && c <= '9')
        out |= c - '0';
      else if (c >= 'a' && c <= 'f')
        out |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        out |= c - 'A' + 10;
      else
        return fail("bad \\u escape");
    }
    return Status();
  }
  Status string(std::string &out) {
    ++pos; // opening quote
    out.clear();
    while (true) {
      if (pos >= s.size())
        return fail("unterminated string");
      char c = s[pos++];
      if (c == '"')
        return Status();
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= s.size())
        return fail("unterminated escape");
      char e = s[pos++];
      switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp = 0;
        TXRT_RETURN_IF_ERROR(hex4(cp));
        if (cp >= 0xD800 && cp < 0xDC00 && s.compare(pos, 2, "\\u") == 0) {
          pos += 2;
          uint32_t low = 0;
          TXRT_RETURN_IF_ERROR(hex4(low));
          if (low < 0xDC00 || low >= 0xE000)
            return fail("bad surrogate pair");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return fail(std::string("bad escape '\\") + e + "'");
      }
    }
  }
  Status value(Value &out) {
    if (++depth > 64)
      return fail("nested too deeply");
    skipSpace();
    if (pos >= s.size())
      return fail("unexpected end");
    char c = s[pos];
    if (c == '{') {
      out.kind = Value::Kind::Object;
      ++pos;
      skipSpace();
      if (pos < s.size() && s[pos] == '}') {
        ++pos;
      } else {
        while (true) {
          skipSpace();
          if (pos >= s.size() || s[pos] != '"')
            return fail("expected a member name");
          std::string key;
          TXRT_RETURN_IF_ERROR(string(key));
          skipSpace();
          if (pos >= s.size() || s[pos] != ':')
            return fail("expected ':'");
          ++pos;
          Value member;
          TXRT_RETURN_IF_ERROR(value(member));
          out.object.emplace_back(std::move(key), std::move(member));
          skipSpace();
          if (pos < s.size() && s[pos] == ',') {
            ++pos;
            continue;
          }
          if (pos < s.size() && s[pos] == '}') {
            ++pos;
            break;
          }
          return fail("expected ',' or '}'");
        }
      }
    } else if (c == '[') {
      out.kind = Value::Kind::Array;
      ++pos;
      skipSpace();
      if (pos < s.size() && s[pos] == ']') {
        ++pos;
      } else {
        while (true) {
          Value element;
          TXRT_RETURN_IF_ERROR(value(element));
          out.array.push_back(std::move(element));
          skipSpace();
          if (pos < s.size() && s[pos] == ',') {
            ++pos;
            continue;
          }
          if (pos < s.size() && s[pos] == ']') {
            ++pos;
            break;
          }
          return fail("expected ',' or ']'");
        }
      }
    } else if (c == '"') {
      out.kind = Value::Kind::String;
      TXRT_RETURN_IF_ERROR(string(out.text));
    } else if (literal("true")) {
      out.kind = Value::Kind::Bool;
      out.boolean = true;
    } else if (literal("false")) {
      out.kind = Value::Kind::Bool;
    } else if (literal("null")) {
      out.kind = Value::Kind::Null;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      size_t start = pos;
      if (s[pos] == '-')
        ++pos;
      while (pos < s.size() && (std::isdigit(static_cast<unsigned char>(s[pos])) ||
                                s[pos] == '.' || s[pos] == 'e' || s[pos] == 'E' ||
                                s[pos] == '+' || s[pos] == '-'))
        ++pos;
      out.kind = Value::Kind::Number;
      out.text = s.substr(start, pos - start);
      char *end = nullptr;
      out.number = std::strtod(out.text.c_str(), &end);
      if (*end || out.text == "-")
        return fail("bad number '" + out.text + "'");
    } else {
      return fail(std::string("unexpected '") + c + "'");
    }
    --depth;
    return Status();
  }
};

} // namespace

Status parse(const std::string &text, Value &out) {
  Parser p{text};
  out = Value();
  TXRT_RETURN_IF_ERROR(p.value(out));
  p.skipSpace();
  if (p.pos != text.size())
    return p.fail("trailing characters");
  return Status();
}

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

std::string number(double v) {
  if (!std::isfinite(v))
    return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string serialize(const Value &v) {
  switch (v.kind) {
  case Value::Kind::Null: return "null";
  case Value::Kind::Bool: return v.boolean ? "true" : "false";
  case Value::Kind::Number: return v.text.empty() ? number(v.number) : v.text;
  case Value::Kind::String: return quote(v.text);
  case Value::Kind::Array: {
    std::string out = "[";
    for (size_t i = 0; i < v.array.size(); ++i)
      out += (i ? "," : "") + serialize(v.array[i]);
    return out + "]";
  }
  case Value::Kind::Object: {
    std::string out = "{";
    for (size_t i = 0; i < v.object.size(); ++i)
      out += (i ? "," : "") + quote(v.object[i].first) + ":" + serialize(v.object[i].second);
    return out + "}";
  }
  }
  return "null";
}

} // namespace json
} // namespace txrt
