//===- OpGraph.cpp - a model as plain C++ ---------------------------------===//

#include "soap/graph/OpGraph.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

using json = nlohmann::json;

namespace soap {

int64_t GraphTensor::numElements() const {
  int64_t elements = 1;
  for (int64_t size : shape)
    elements *= size < 0 ? 1 : size;
  return elements;
}

const char *opClassName(OpClass opClass) {
  switch (opClass) {
  case OpClass::Matmul:
    return "matmul";
  case OpClass::Conv:
    return "conv";
  case OpClass::Elementwise:
    return "elementwise";
  case OpClass::Reduction:
    return "reduction";
  case OpClass::DataMovement:
    return "data_movement";
  }
  return "elementwise";
}

std::optional<OpClass> parseOpClass(const std::string &name) {
  for (OpClass c : {OpClass::Matmul, OpClass::Conv, OpClass::Elementwise,
                    OpClass::Reduction, OpClass::DataMovement})
    if (name == opClassName(c))
      return c;
  return std::nullopt;
}

bool OpNode::isLookupTable(const NodeAccess &access) const {
  for (const IndexExpr &index : access.indices)
    for (const IndexTerm &term : index.terms)
      if (term.loop < lookupLoops.size() && lookupLoops[term.loop])
        return true;
  return false;
}

LoopNest OpNode::loopNest(const std::vector<GraphTensor> &tensors) const {
  LoopNest nest;
  nest.loopSizes = loopSizes;
  nest.flopsPerIteration = flopsPerIteration;
  nest.lookupLoops = lookupLoops;
  for (const NodeAccess &access : accesses) {
    TensorAccess tensor;
    tensor.indices = access.indices;
    tensor.role = access.role;
    const GraphTensor &t = tensors[access.tensor];
    tensor.shape = t.shape;
    tensor.elementBytes = t.elementBytes;
    nest.accesses.push_back(std::move(tensor));
  }
  return nest;
}

std::vector<std::pair<int, int>> OpGraph::readTensors(int node) const {
  std::vector<std::pair<int, int>> reads;
  const OpNode &n = nodes[node];
  for (size_t i = 0; i < n.accesses.size(); ++i) {
    const NodeAccess &a = n.accesses[i];
    if (a.role == AccessRole::Write || a.role == AccessRole::Shape ||
        tensors[a.tensor].producer == node)
      continue;
    reads.emplace_back(a.tensor, static_cast<int>(i));
  }
  return reads;
}

std::vector<std::vector<int>> OpGraph::consumers() const {
  std::vector<std::vector<int>> result(nodes.size());
  for (size_t c = 0; c < nodes.size(); ++c)
    for (const auto &[tensor, access] : readTensors(static_cast<int>(c))) {
      int producer = tensors[tensor].producer;
      if (producer >= 0 && (result[producer].empty() ||
                            result[producer].back() != static_cast<int>(c)))
        result[producer].push_back(static_cast<int>(c));
    }
  return result;
}

int64_t OpGraph::parameterBytes() const {
  int64_t bytes = 0;
  for (const GraphTensor &t : tensors)
    if (t.isParameter && t.producer < 0)
      bytes += t.bytes();
  return bytes;
}

bool GraphTensor::isFloat() const {
  return dtype.rfind("f", 0) == 0 || dtype.rfind("bf", 0) == 0 ||
         dtype.rfind("tf", 0) == 0;
}

bool OpGraph::carriesGradient(int tensor) const {
  const GraphTensor &t = tensors[tensor];
  return (t.isParameter && t.producer < 0 && t.isFloat()) ||
         (t.producer >= 0 && nodes[t.producer].needsBackward);
}

bool OpGraph::keepsForBackward(int node, int access) const {
  const OpNode &n = nodes[node];
  const NodeAccess &a = n.accesses[access];
  if (a.role != AccessRole::Read || !a.savedForBackward || a.isDestination)
    return false;
  if (!isContraction(n.opClass))
    return true;
  // Another operand's gradient reads this one (a product of a tensor with
  // itself included).
  for (size_t b = 0; b < n.accesses.size(); ++b) {
    const NodeAccess &other = n.accesses[b];
    if (static_cast<int>(b) != access && other.role == AccessRole::Read &&
        !other.isDestination && carriesGradient(other.tensor))
      return true;
  }
  return false;
}

void OpGraph::markBackward() {
  // A node needs backward work when one of its inputs depends on a
  // parameter (gradients flow back through it to that parameter). Only
  // floating-point tensors carry gradients: an integer slice of a constant
  // table (torch-mlir BERT's position ids) has none.
  std::vector<bool> dependsOnParam(tensors.size(), false);
  for (size_t t = 0; t < tensors.size(); ++t)
    dependsOnParam[t] = tensors[t].isParameter && tensors[t].producer < 0 &&
                        tensors[t].isFloat();
  for (size_t n = 0; n < nodes.size(); ++n) {
    bool any = false;
    for (const auto &[tensor, access] : readTensors(static_cast<int>(n)))
      any |= dependsOnParam[tensor] &&
             !nodes[n].accesses[access].isDestination;
    // Destinations matter too when they are read (a bias accumulator).
    for (const NodeAccess &a : nodes[n].accesses)
      if (a.isDestination && a.role == AccessRole::Read &&
          dependsOnParam[a.tensor])
        any = true;
    nodes[n].needsBackward = any;
    if (any)
      for (const NodeAccess &a : nodes[n].accesses)
        // Results: written ones, and the views a reshape or slice
        // produces without moving data (role Unread).
        if ((a.role == AccessRole::Write ||
             tensors[a.tensor].producer == static_cast<int>(n)) &&
            tensors[a.tensor].isFloat())
          dependsOnParam[a.tensor] = true;
  }
  markGradientSums();
}

void OpGraph::markGradientSums() {
  // The readers of each tensor that take its gradient, in node order.
  std::vector<std::vector<std::pair<int, int>>> readers(tensors.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    nodes[n].accumulatedReads.clear();
    if (!nodes[n].needsBackward)
      continue;
    for (const auto &[tensor, access] : readTensors(static_cast<int>(n))) {
      const GraphTensor &t = tensors[tensor];
      bool active = (t.isParameter && t.producer < 0) ||
                    (t.producer >= 0 && nodes[t.producer].needsBackward);
      if (active && !nodes[n].accesses[access].isDestination &&
          nodes[n].accesses[access].role == AccessRole::Read)
        readers[tensor].emplace_back(static_cast<int>(n), access);
    }
  }
  for (const auto &list : readers)
    for (size_t i = 0; i + 1 < list.size(); ++i) {
      OpNode &node = nodes[list[i].first];
      if (!isContraction(node.opClass))
        node.accumulatedReads.push_back(list[i].second);
    }
}

std::optional<std::string> OpGraph::validate() const {
  std::ostringstream os;
  for (size_t t = 0; t < tensors.size(); ++t) {
    int p = tensors[t].producer;
    if (p >= static_cast<int>(nodes.size()) || p < -1) {
      os << "tensor " << t << " ('" << tensors[t].name
         << "') has producer " << p << " out of range";
      return os.str();
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    const OpNode &node = nodes[n];
    if (node.loopNames.size() != node.loopSizes.size() ||
        node.loopKinds.size() != node.loopSizes.size() ||
        (!node.overBatch.empty() &&
         node.overBatch.size() != node.loopSizes.size()) ||
        (!node.lookupLoops.empty() &&
         node.lookupLoops.size() != node.loopSizes.size())) {
      os << "node " << n << " (" << node.opName
         << ") has mismatched loop sizes, names and kinds";
      return os.str();
    }
    for (const NodeAccess &a : node.accesses) {
      if (a.tensor < 0 || a.tensor >= static_cast<int>(tensors.size())) {
        os << "node " << n << " (" << node.opName << ") accesses tensor "
           << a.tensor << " out of range";
        return os.str();
      }
      if (a.indices.size() != tensors[a.tensor].shape.size()) {
        os << "node " << n << " (" << node.opName << ") indexes tensor "
           << a.tensor << " with " << a.indices.size()
           << " expressions but it has rank "
           << tensors[a.tensor].shape.size();
        return os.str();
      }
      for (const IndexExpr &e : a.indices)
        for (const IndexTerm &term : e.terms)
          if (term.loop >= node.loopSizes.size()) {
            os << "node " << n << " (" << node.opName << ") uses loop "
               << term.loop << " but has " << node.loopSizes.size();
            return os.str();
          }
    }
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

static const char *roleName(AccessRole role) {
  switch (role) {
  case AccessRole::Read:
    return "read";
  case AccessRole::Write:
    return "write";
  case AccessRole::Unread:
    return "unread";
  case AccessRole::Shape:
    return "shape";
  }
  return "read";
}

static json indexToJSON(const IndexExpr &e) {
  json terms = json::array();
  for (const IndexTerm &t : e.terms)
    terms.push_back({t.loop, t.coefficient});
  json j = {{"terms", terms}, {"constant", e.constant}};
  if (!e.isLinear)
    j["linear"] = false;
  return j;
}

std::string OpGraph::toJSON() const {
  json j;
  j["version"] = 1;
  json jt = json::array();
  for (const GraphTensor &t : tensors) {
    json e = {{"name", t.name},           {"shape", t.shape},
              {"element_bytes", t.elementBytes}, {"dtype", t.dtype},
              {"producer", t.producer}};
    if (t.isParameter)
      e["parameter"] = true;
    if (t.isInput)
      e["input"] = true;
    if (t.isLoss)
      e["loss"] = true;
    jt.push_back(e);
  }
  j["tensors"] = jt;
  json jn = json::array();
  for (const OpNode &n : nodes) {
    json kinds = json::array();
    for (DimKind k : n.loopKinds)
      kinds.push_back(dimKindName(k));
    json accesses = json::array();
    for (const NodeAccess &a : n.accesses) {
      json indices = json::array();
      for (const IndexExpr &e : a.indices)
        indices.push_back(indexToJSON(e));
      json ja = {{"tensor", a.tensor}, {"role", roleName(a.role)},
                 {"indices", indices}};
      if (a.isDestination)
        ja["destination"] = true;
      if (a.role == AccessRole::Read && !a.savedForBackward)
        ja["saved_for_backward"] = false;
      if (a.gradientIsAdjoint)
        ja["gradient_is_adjoint"] = true;
      if (a.viaCopyBefore >= 0)
        ja["via_copy_before"] = a.viaCopyBefore;
      accesses.push_back(ja);
    }
    json e = {{"op", n.opName},
              {"location", n.location},
              {"class", opClassName(n.opClass)},
              {"partitionable", n.partitionable},
              {"loop_sizes", n.loopSizes},
              {"loop_names", n.loopNames},
              {"loop_kinds", kinds},
              {"over_batch", n.overBatch},
              {"flops_per_iteration", n.flopsPerIteration},
              {"needs_backward", n.needsBackward},
              {"accesses", accesses}};
    if (!n.lookupLoops.empty())
      e["lookup_loops"] = n.lookupLoops;
    if (n.splat)
      e["splat"] = true;
    if (n.completesPartials)
      e["completes_partials"] = true;
    if (n.partialsUncombinable)
      e["partials_uncombinable"] = true;
    if (n.relayoutCopy)
      e["relayout_copy"] = true;
    jn.push_back(e);
  }
  j["nodes"] = jn;
  return j.dump(1);
}

namespace {
/// Reads fields with errors that name the path.
struct Reader {
  std::string &error;
  bool fail(const std::string &path, const std::string &what) {
    if (error.empty())
      error = "'" + path + "' " + what;
    return false;
  }
  template <typename T>
  bool get(const json &j, const char *key, const std::string &path, T &out,
           bool required = true) {
    auto it = j.find(key);
    if (it == j.end())
      return required ? fail(path + "." + key, "is missing") : true;
    try {
      out = it->template get<T>();
    } catch (const json::exception &e) {
      return fail(path + "." + key, std::string("has the wrong type: ") +
                                        e.what());
    }
    return true;
  }
};
} // namespace

std::optional<OpGraph> OpGraph::fromJSON(const std::string &text,
                                         std::string &error) {
  error.clear();
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    error = "not valid JSON";
    return std::nullopt;
  }
  Reader r{error};
  OpGraph graph;
  if (!j.is_object() || !j.contains("tensors") || !j["tensors"].is_array() ||
      !j.contains("nodes") || !j["nodes"].is_array()) {
    error = "an OpGraph needs 'tensors' and 'nodes' arrays";
    return std::nullopt;
  }
  for (size_t i = 0; i < j["tensors"].size(); ++i) {
    const json &e = j["tensors"][i];
    std::string path = "tensors[" + std::to_string(i) + "]";
    GraphTensor t;
    if (!r.get(e, "name", path, t.name) || !r.get(e, "shape", path, t.shape) ||
        !r.get(e, "element_bytes", path, t.elementBytes) ||
        !r.get(e, "dtype", path, t.dtype, false) ||
        !r.get(e, "producer", path, t.producer) ||
        !r.get(e, "parameter", path, t.isParameter, false) ||
        !r.get(e, "input", path, t.isInput, false) ||
        !r.get(e, "loss", path, t.isLoss, false))
      return std::nullopt;
    graph.tensors.push_back(std::move(t));
  }
  for (size_t i = 0; i < j["nodes"].size(); ++i) {
    const json &e = j["nodes"][i];
    std::string path = "nodes[" + std::to_string(i) + "]";
    OpNode n;
    std::string opClass;
    std::vector<std::string> kinds;
    if (!r.get(e, "op", path, n.opName) ||
        !r.get(e, "location", path, n.location, false) ||
        !r.get(e, "class", path, opClass) ||
        !r.get(e, "partitionable", path, n.partitionable, false) ||
        !r.get(e, "loop_sizes", path, n.loopSizes) ||
        !r.get(e, "loop_names", path, n.loopNames) ||
        !r.get(e, "loop_kinds", path, kinds) ||
        !r.get(e, "over_batch", path, n.overBatch, false) ||
        !r.get(e, "lookup_loops", path, n.lookupLoops, false) ||
        !r.get(e, "flops_per_iteration", path, n.flopsPerIteration) ||
        !r.get(e, "needs_backward", path, n.needsBackward, false) ||
        !r.get(e, "splat", path, n.splat, false) ||
        !r.get(e, "completes_partials", path, n.completesPartials, false) ||
        !r.get(e, "partials_uncombinable", path, n.partialsUncombinable,
               false) ||
        !r.get(e, "relayout_copy", path, n.relayoutCopy, false))
      return std::nullopt;
    auto parsedClass = parseOpClass(opClass);
    if (!parsedClass) {
      r.fail(path + ".class", "is '" + opClass + "', not an op class");
      return std::nullopt;
    }
    n.opClass = *parsedClass;
    for (const std::string &k : kinds) {
      auto kind = parseDimKind(k);
      if (!kind) {
        r.fail(path + ".loop_kinds", "contains '" + k + "', not a kind");
        return std::nullopt;
      }
      n.loopKinds.push_back(*kind);
    }
    if (!e.contains("accesses") || !e["accesses"].is_array()) {
      r.fail(path + ".accesses", "is missing");
      return std::nullopt;
    }
    for (size_t a = 0; a < e["accesses"].size(); ++a) {
      const json &ja = e["accesses"][a];
      std::string apath = path + ".accesses[" + std::to_string(a) + "]";
      NodeAccess access;
      std::string role;
      if (!r.get(ja, "tensor", apath, access.tensor) ||
          !r.get(ja, "role", apath, role) ||
          !r.get(ja, "destination", apath, access.isDestination, false) ||
          !r.get(ja, "saved_for_backward", apath, access.savedForBackward,
                 false) ||
          !r.get(ja, "gradient_is_adjoint", apath, access.gradientIsAdjoint,
                 false) ||
          !r.get(ja, "via_copy_before", apath, access.viaCopyBefore, false))
        return std::nullopt;
      if (role == "read")
        access.role = AccessRole::Read;
      else if (role == "write")
        access.role = AccessRole::Write;
      else if (role == "unread")
        access.role = AccessRole::Unread;
      else if (role == "shape")
        access.role = AccessRole::Shape;
      else {
        r.fail(apath + ".role",
               "is '" + role + "', not read/write/unread/shape");
        return std::nullopt;
      }
      if (!ja.contains("indices") || !ja["indices"].is_array()) {
        r.fail(apath + ".indices", "is missing");
        return std::nullopt;
      }
      for (const json &ji : ja["indices"]) {
        IndexExpr expr;
        std::vector<std::pair<unsigned, int64_t>> terms;
        if (!r.get(ji, "terms", apath + ".indices", terms) ||
            !r.get(ji, "constant", apath + ".indices", expr.constant) ||
            !r.get(ji, "linear", apath + ".indices", expr.isLinear, false))
          return std::nullopt;
        for (auto [loop, coefficient] : terms)
          expr.terms.push_back({loop, coefficient});
        access.indices.push_back(std::move(expr));
      }
      n.accesses.push_back(std::move(access));
    }
    graph.nodes.push_back(std::move(n));
  }
  if (auto problem = graph.validate()) {
    error = *problem;
    return std::nullopt;
  }
  graph.markGradientSums();
  return graph;
}

} // namespace soap
