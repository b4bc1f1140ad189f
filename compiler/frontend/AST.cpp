#include "AST.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace tessera::fe {

const char *spelling(BinOp op) {
  switch (op) {
  case BinOp::Add: return "+";
  case BinOp::Sub: return "-";
  case BinOp::Mul: return "*";
  case BinOp::Div: return "/";
  case BinOp::FloorDiv: return "//";
  case BinOp::Mod: return "%";
  case BinOp::Pow: return "**";
  case BinOp::BitAnd: return "&";
  case BinOp::BitOr: return "|";
  case BinOp::BitXor: return "^";
  case BinOp::Shl: return "<<";
  case BinOp::Shr: return ">>";
  case BinOp::And: return "and";
  case BinOp::Or: return "or";
  case BinOp::Eq: return "==";
  case BinOp::Ne: return "!=";
  case BinOp::Lt: return "<";
  case BinOp::Le: return "<=";
  case BinOp::Gt: return ">";
  case BinOp::Ge: return ">=";
  }
  return "?";
}

const char *spelling(UnOp op) {
  switch (op) {
  case UnOp::Neg: return "-";
  case UnOp::Pos: return "+";
  case UnOp::Not: return "not";
  case UnOp::Invert: return "~";
  }
  return "?";
}

Loc startLoc(const Expr &e) {
  const Expr *p = &e;
  for (;;) {
    switch (p->kind) {
    case ExprKind::Binary:
    case ExprKind::Attribute:
    case ExprKind::Subscript:
    case ExprKind::IfExp:
    case ExprKind::Slice:
      if (!p->operands.empty() && p->operands[0]) {
        p = p->operands[0].get();
        continue;
      }
      return p->loc;
    default:
      return p->loc;
    }
  }
}

namespace {

std::string formatDouble(double v) {
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) // not "inf"/"nan", no point
    s += ".0";
  return s;
}

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    case '\r': out += "\\r"; break;
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    default:
      if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(c));
        out += buf;
      } else {
        out += char(c);
      }
    }
  }
  return out + "\"";
}

void dumpExpr(const Expr *e, std::string &out) {
  if (!e) {
    out += "_";
    return;
  }
  auto list = [&](const char *head, const Expr *first, const std::vector<ExprPtr> &rest) {
    out += "(";
    out += head;
    if (first) {
      out += " ";
      dumpExpr(first, out);
    }
    for (auto &a : rest) {
      out += " ";
      dumpExpr(a.get(), out);
    }
  };
  switch (e->kind) {
  case ExprKind::IntLit: out += std::to_string(e->intValue); return;
  case ExprKind::FloatLit: out += formatDouble(e->floatValue); return;
  case ExprKind::BoolLit: out += e->boolValue ? "True" : "False"; return;
  case ExprKind::StringLit: out += quote(e->str); return;
  case ExprKind::NoneLit: out += "None"; return;
  case ExprKind::Name: out += e->str; return;
  case ExprKind::Attribute:
    out += "(. ";
    dumpExpr(e->operands[0].get(), out);
    out += " " + e->str + ")";
    return;
  case ExprKind::Call:
    list("call", e->operands[0].get(), e->args);
    for (auto &kw : e->keywords) {
      out += " (kw " + kw.name + " ";
      dumpExpr(kw.value.get(), out);
      out += ")";
    }
    out += ")";
    return;
  case ExprKind::Subscript:
    list("sub", e->operands[0].get(), e->args);
    out += ")";
    return;
  case ExprKind::Slice:
    out += "(: ";
    dumpExpr(e->operands.size() > 0 ? e->operands[0].get() : nullptr, out);
    out += " ";
    dumpExpr(e->operands.size() > 1 ? e->operands[1].get() : nullptr, out);
    out += ")";
    return;
  case ExprKind::Binary:
    list(spelling(e->binOp), nullptr, e->operands);
    out += ")";
    return;
  case ExprKind::Unary:
    list(spelling(e->unOp), nullptr, e->operands);
    out += ")";
    return;
  case ExprKind::Tuple:
    list("tuple", nullptr, e->args);
    out += ")";
    return;
  case ExprKind::List:
    list("list", nullptr, e->args);
    out += ")";
    return;
  case ExprKind::IfExp:
    out += "(ifexp ";
    dumpExpr(e->operands[1].get(), out);
    out += " ";
    dumpExpr(e->operands[0].get(), out);
    out += " ";
    dumpExpr(e->operands[2].get(), out);
    out += ")";
    return;
  }
  out += "?";
}

std::string annotText(const TypeAnnot &a) { return std::string(size_t(a.pointerDepth), '*') + a.name; }

void dumpBlock(const Block &b, int indent, std::string &out);

void dumpStmt(const Stmt &s, int indent, std::string &out) {
  out.append(size_t(indent) * 2, ' ');
  switch (s.kind) {
  case StmtKind::Expr:
    out += "expr " + dump(*s.value) + "\n";
    return;
  case StmtKind::Assign:
    out += dump(*s.targets[0]) + " = " + dump(*s.value) + "\n";
    return;
  case StmtKind::AugAssign:
    out += dump(*s.targets[0]) + " " + spelling(s.augOp) + "= " + dump(*s.value) + "\n";
    return;
  case StmtKind::If:
    out += "if " + dump(*s.cond) + "\n";
    dumpBlock(s.body, indent + 1, out);
    if (!s.orelse.empty()) {
      out.append(size_t(indent) * 2, ' ');
      out += "else\n";
      dumpBlock(s.orelse, indent + 1, out);
    }
    return;
  case StmtKind::For:
    out += "for " + dump(*s.targets[0]) + " in " + dump(*s.value) + "\n";
    dumpBlock(s.body, indent + 1, out);
    return;
  case StmtKind::While:
    out += "while " + dump(*s.cond) + "\n";
    dumpBlock(s.body, indent + 1, out);
    return;
  case StmtKind::Return:
    out += s.value ? "return " + dump(*s.value) + "\n" : "return\n";
    return;
  case StmtKind::Pass: out += "pass\n"; return;
  case StmtKind::Break: out += "break\n"; return;
  case StmtKind::Continue: out += "continue\n"; return;
  }
}

void dumpBlock(const Block &b, int indent, std::string &out) {
  for (auto &s : b)
    dumpStmt(*s, indent, out);
}

} // namespace

std::string dump(const Expr &e) {
  std::string out;
  dumpExpr(&e, out);
  return out;
}

std::string dump(const Module &m) {
  std::string out;
  for (auto &imp : m.imports) {
    out += "import " + quote(imp.path);
    for (size_t i = 0; i < imp.names.size(); ++i) {
      out += i ? ", " : " ";
      out += imp.names[i].name;
      if (!imp.names[i].alias.empty())
        out += " as " + imp.names[i].alias;
    }
    out += "\n";
  }
  for (auto &g : m.globals)
    out += "const " + g.name + " = " + dump(*g.value) + "\n";
  for (auto &f : m.functions) {
    for (auto &d : f->decorators)
      out += (d.call ? "@" + dump(*d.call) : "@" + d.name) + "\n";
    out += "def " + f->name + "(";
    for (size_t i = 0; i < f->params.size(); ++i) {
      const Param &p = f->params[i];
      if (i)
        out += ", ";
      out += p.name;
      if (p.hasAnnot)
        out += ": " + annotText(p.annot);
      if (p.defaultValue)
        out += " = " + dump(*p.defaultValue);
    }
    out += ")";
    if (f->hasReturnAnnot)
      out += " -> " + annotText(f->returnAnnot);
    out += "\n";
    dumpBlock(f->body, 1, out);
  }
  return out;
}

bool hasLoopExit(const Block &block, StmtKind kind) {
  for (const StmtPtr &s : block) {
    if (s->kind == kind)
      return true;
    if (s->kind == StmtKind::For || s->kind == StmtKind::While)
      continue; // its exits are its own
    if (hasLoopExit(s->body, kind) || hasLoopExit(s->orelse, kind))
      return true;
  }
  return false;
}

bool mayExitLoop(const Stmt &s) {
  if (s.kind == StmtKind::Break || s.kind == StmtKind::Continue)
    return true;
  if (s.kind == StmtKind::For || s.kind == StmtKind::While)
    return false;
  for (StmtKind k : {StmtKind::Break, StmtKind::Continue})
    if (hasLoopExit(s.body, k) || hasLoopExit(s.orelse, k))
      return true;
  return false;
}

} // namespace tessera::fe
