// Running NVIDIA's ptxas: PTX -> cubin, and its -v resource report.
#include "tessera/CodeGen.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <regex>
#include <spawn.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace tessera {

namespace {

bool isExecutable(const std::string &path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

bool writeFile(const std::string &path, const std::string &data) {
  std::ofstream f(path, std::ios::binary);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  return static_cast<bool>(f);
}

bool readFile(const std::string &path, std::string &data) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  data = ss.str();
  return true;
}

/// Runs argv[0] with stdout and stderr into `logPath`; returns the exit
/// status, or -1 when it could not be started (errno-style message in `why`).
int runTool(const std::vector<std::string> &args, const std::string &logPath, std::string &why) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char *> argv;
  for (const std::string &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    why = std::strerror(rc);
    return -1;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      why = std::strerror(errno);
      return -1;
    }
  }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  why = "killed by signal " + std::to_string(WTERMSIG(status));
  return -1;
}

/// A temporary directory removed (with the files we put in it) on scope exit.
struct TempDir {
  std::string path;
  std::vector<std::string> files;
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tessera-ptxas-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()))
      path = buf.data();
  }
  std::string file(const std::string &name) {
    files.push_back(path + "/" + name);
    return files.back();
  }
  ~TempDir() {
    if (path.empty())
      return;
    for (const std::string &f : files)
      ::unlink(f.c_str());
    ::rmdir(path.c_str());
  }
};

} // namespace

std::string findPtxas() {
  if (const char *env = std::getenv("TESSERA_PTXAS"); env && *env)
    return isExecutable(env) ? std::string(env) : std::string();
  if (isExecutable("/usr/local/cuda/bin/ptxas"))
    return "/usr/local/cuda/bin/ptxas";
  if (const char *path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':'))
      if (!dir.empty() && isExecutable(dir + "/ptxas"))
        return dir + "/ptxas";
  }
  return {};
}

bool assembleCubin(const std::string &ptx, const std::string &arch, std::string &cubin,
                   std::string &log, int optLevel) {
  cubin.clear();
  log.clear();
  std::string ptxas = findPtxas();
  if (ptxas.empty()) {
    log = "ptxas not found (set TESSERA_PTXAS, or install the CUDA toolkit in /usr/local/cuda)";
    return false;
  }
  TempDir dir;
  if (dir.path.empty()) {
    log = std::string("cannot create a temporary directory: ") + std::strerror(errno);
    return false;
  }
  std::string in = dir.file("kernel.ptx"), out = dir.file("kernel.cubin"),
              logPath = dir.file("ptxas.log");
  if (!writeFile(in, ptx)) {
    log = "cannot write " + in;
    return false;
  }
  if (optLevel < 0)
    optLevel = 0;
  if (optLevel > 3)
    optLevel = 3;
  std::vector<std::string> args = {ptxas, "-arch=" + arch, "-v", "-O" + std::to_string(optLevel),
                                   "-o", out, in};
  std::string why;
  int rc = runTool(args, logPath, why);
  readFile(logPath, log);
  if (rc != 0) {
    if (rc < 0)
      log = "cannot run " + ptxas + ": " + why + (log.empty() ? "" : "\n" + log);
    else if (log.empty())
      log = ptxas + " failed with exit code " + std::to_string(rc);
    return false;
  }
  if (!readFile(out, cubin) || cubin.empty()) {
    log += "\nptxas produced no cubin";
    cubin.clear();
    return false;
  }
  return true;
}

static int toInt(const std::string &digits) {
  return static_cast<int>(std::strtol(digits.c_str(), nullptr, 10));
}

std::vector<PtxasKernelInfo> parsePtxasLog(const std::string &log) {
  static const std::regex entryRe(R"(Compiling entry function '([^']+)')");
  static const std::regex propsRe(R"(Function properties for (\S+))");
  static const std::regex frameRe(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex usedRe(R"(Used (\d+) registers)");
  static const std::regex barRe(R"(used (\d+) barriers)");
  static const std::regex smemRe(R"((\d+) bytes smem)");
  // Printed before the function's "Compiling entry function" line.
  static const std::regex serialRe(
      R"(wgmma\.mma_async instructions are serialized due to (.*) in the function '([^']+)')");
  std::map<std::string, std::string> serialized; // function -> reason

  std::vector<PtxasKernelInfo> kernels;
  std::string propsFor; // the function whose "Function properties" were last announced
  std::istringstream in(log);
  std::string line;
  std::smatch m;
  auto find = [&](const std::string &name) -> PtxasKernelInfo * {
    for (auto it = kernels.rbegin(); it != kernels.rend(); ++it)
      if (it->name == name)
        return &*it;
    return nullptr;
  };
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, serialRe)) {
      serialized[m[2]] = m[1];
    } else if (std::regex_search(line, m, entryRe)) {
      kernels.push_back(PtxasKernelInfo{});
      kernels.back().name = m[1];
      propsFor.clear();
    } else if (std::regex_search(line, m, propsRe)) {
      propsFor = m[1];
    } else if (std::regex_search(line, m, frameRe)) {
      if (PtxasKernelInfo *k = find(propsFor)) {
        k->stackBytes = toInt(m[1]);
        k->spillStores = toInt(m[2]);
        k->spillLoads = toInt(m[3]);
      }
    } else if (std::regex_search(line, m, usedRe) && !kernels.empty()) {
      PtxasKernelInfo &k = kernels.back();
      k.registers = toInt(m[1]);
      if (std::regex_search(line, m, barRe))
        k.barriers = toInt(m[1]);
      if (std::regex_search(line, m, smemRe))
        k.sharedBytes = toInt(m[1]);
    }
  }
  for (PtxasKernelInfo &k : kernels)
    if (auto it = serialized.find(k.name); it != serialized.end())
      k.wgmmaSerialized = it->second;
  return kernels;
}

} // namespace tessera
