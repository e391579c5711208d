#include "registry/registry.hpp"

#include <ophost/error.hpp>
#include <ophost/pack.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace ophost {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string range_string(int32_t since, int32_t end) {
  if (end == OPH_OPSET_MAX) return "[" + std::to_string(since) + "+]";
  return "[" + std::to_string(since) + "-" + std::to_string(end) + "]";
}

std::string show_domain(const std::string& d) { return d.empty() ? "ai.onnx" : d; }

std::string source_string(const OpSource& s) {
  std::string out = "'" + s.plugin_name + "'";
  if (!s.manifest_path.empty()) out += " (" + s.manifest_path.string() + ")";
  return out;
}

}  // namespace

void OpRegistry::add(const LoadedPlugin& plugin, const oph_op_def* op, bool allow_override) {
  add(OpSource{plugin.name(), plugin.manifest_path(), &plugin}, op, allow_override);
}

void OpRegistry::add(const OpSource& source, const oph_op_def* op, bool allow_override) {
  if (op == nullptr) throw Error(Code::kInvalidArgument, "plugin " + source_string(source) + ": NULL op definition");
  if (std::string problem = validate_op_def(op); !problem.empty()) {
    throw Error(Code::kInvalidArgument, "plugin " + source_string(source) + ": op " + describe_op(*op) + ": " +
                                            problem + "; fix the pack's op table (`ophost pack check` shows it)");
  }
  OpEntry e{std::make_shared<const OpSchema>(OpSchema::from_def(*op)), source};
  const OpSchema& s = *e.schema;

  auto& list = entries_[Key{s.domain, s.name, s.device}];
  for (const auto& prev : list) {
    const OpSchema& p = *prev.schema;
    if (p.since_version > s.end_version || s.since_version > p.end_version) continue;
    std::string what = "op " + show_domain(s.domain) + "::" + s.name + " on " + s.device + " is served by plugin " +
                       source_string(prev.source) + " for opsets " + range_string(p.since_version, p.end_version) +
                       " and by plugin " + source_string(source) + " for opsets " +
                       range_string(s.since_version, s.end_version);
    if (!allow_override) {
      throw Error(Code::kAlreadyExists,
                  "conflicting operator packs: " + what +
                      "; the ranges overlap. Disable one of them (OPHOST_PLUGINS_DISABLE=<name>) or allow the "
                      "later one to override explicitly");
    }
    spdlog::warn("{}; plugin '{}' overrides plugin '{}' where the ranges overlap (override allowed)", what,
                 source.plugin_name, prev.source.plugin_name);
  }
  list.push_back(std::move(e));
}

void OpRegistry::add_all(const PluginSet& plugins, bool allow_override) {
  for (const auto& p : plugins.loaded()) {
    for (const oph_op_def* op : p->ops()) add(*p, op, allow_override);
  }
}

const OpEntry* OpRegistry::resolve(std::string_view domain, std::string_view name, int64_t opset,
                                   std::string_view device) const {
  auto it = entries_.find(Key{normalize_domain(domain), std::string(name), std::string(device)});
  if (it == entries_.end()) return nullptr;
  for (auto e = it->second.rbegin(); e != it->second.rend(); ++e) {
    if (e->contains(opset)) return &*e;
  }
  return nullptr;
}

std::vector<const OpEntry*> OpRegistry::candidates(std::string_view domain, std::string_view name) const {
  std::vector<const OpEntry*> out;
  std::string d = normalize_domain(domain);
  for (const auto& [key, list] : entries_) {
    if (std::get<0>(key) != d || std::get<1>(key) != name) continue;
    for (const auto& e : list) out.push_back(&e);
  }
  return out;
}

std::vector<std::string> OpRegistry::devices_for(std::string_view domain, std::string_view name,
                                                 int64_t opset) const {
  std::set<std::string> out;
  for (const auto* e : candidates(domain, name)) {
    if (e->contains(opset)) out.insert(e->schema->device);
  }
  return {out.begin(), out.end()};
}

std::string OpRegistry::hint(std::string_view domain_in, std::string_view name_in, int64_t opset,
                             std::string_view device_in) const {
  const std::string domain = normalize_domain(domain_in);
  const std::string name(name_in);
  const std::string device(device_in);
  std::vector<std::string> fixes;

  // Same (domain, name, device), other opset ranges.
  {
    std::vector<std::string> ranges;
    for (const auto* e : candidates(domain, name)) {
      if (e->schema->device == device && !e->contains(opset)) {
        ranges.push_back(range_string(e->schema->since_version, e->schema->end_version) + " (plugin '" +
                         e->source.plugin_name + "')");
      }
    }
    if (!ranges.empty()) {
      std::string list;
      for (const auto& r : ranges) list += (list.empty() ? "" : ", ") + r;
      fixes.push_back(show_domain(domain) + "::" + name + " on " + device + " exists for opsets " + list +
                      ", not opset " + std::to_string(opset) + ": change the model's opset_import for domain '" +
                      show_domain(domain) + "' to a version in one of these ranges, or install a pack that serves opset " +
                      std::to_string(opset));
    }
  }
  // Same (domain, name), other devices.
  {
    std::vector<std::string> devs;
    for (const auto& d : devices_for(domain, name, opset)) {
      if (d != device) devs.push_back(d);
    }
    if (!devs.empty()) {
      std::string list;
      for (const auto& d : devs) list += (list.empty() ? "" : ", ") + d;
      fixes.push_back(show_domain(domain) + "::" + name + " at opset " + std::to_string(opset) +
                      " is available on " + list + ", not on " + device + ": allow one of these devices (--device " +
                      devs.front() + ")");
    }
  }
  // Same name in other domains; case-insensitive matches.
  {
    std::set<std::string> other_domains;
    std::set<std::string> case_matches;
    const std::string lname = lower(name);
    for (const auto& [key, list] : entries_) {
      const auto& [d, n, dev] = key;
      if (n == name && d != domain) other_domains.insert(d);
      if (n != name && lower(n) == lname) case_matches.insert(show_domain(d) + "::" + n);
    }
    for (const auto& d : other_domains) {
      fixes.push_back("'" + name + "' exists in domain '" + show_domain(d) + "' (not '" + show_domain(domain) +
                      "'): set the node's domain to '" + show_domain(d) + "'" +
                      (d.empty() ? std::string() : " and add an opset_import for it"));
    }
    for (const auto& m : case_matches) {
      fixes.push_back("did you mean " + m + "? (op names are case-sensitive)");
    }
  }
  if (fixes.empty()) return "";
  std::string out;
  for (const auto& f : fixes) out += (out.empty() ? "" : "; ") + f;
  return out;
}

size_t OpRegistry::size() const noexcept {
  size_t n = 0;
  for (const auto& [key, list] : entries_) n += list.size();
  return n;
}

std::vector<const OpEntry*> OpRegistry::all() const {
  std::vector<const OpEntry*> out;
  for (const auto& [key, list] : entries_) {
    for (const auto& e : list) out.push_back(&e);
  }
  return out;
}

}  // namespace ophost
