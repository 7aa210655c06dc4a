//===- ParallelConfig.cpp - degrees and device placement of an op ---------===//

#include "soap/graph/ParallelConfig.h"

#include <sstream>

namespace soap {

int64_t ParallelConfig::numTasks() const {
  int64_t tasks = 1;
  for (int64_t degree : degrees)
    tasks *= degree;
  return tasks;
}

std::vector<int64_t> ParallelConfig::taskCoordinates(int64_t task) const {
  std::vector<int64_t> coords(degrees.size(), 0);
  for (size_t i = degrees.size(); i-- > 0;) {
    coords[i] = task % degrees[i];
    task /= degrees[i];
  }
  return coords;
}

int64_t ParallelConfig::taskIndex(const std::vector<int64_t> &coords) const {
  int64_t task = 0;
  for (size_t i = 0; i < degrees.size(); ++i)
    task = task * degrees[i] + coords[i];
  return task;
}

std::vector<int64_t>
ParallelConfig::shardSizes(const std::vector<int64_t> &loopSizes) const {
  std::vector<int64_t> sizes(loopSizes.size());
  for (size_t i = 0; i < loopSizes.size(); ++i)
    sizes[i] = i < degrees.size() ? loopSizes[i] / degrees[i] : loopSizes[i];
  return sizes;
}

std::string formatList(const std::vector<int64_t> &values) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < values.size(); ++i)
    os << (i ? ", " : "") << values[i];
  os << ']';
  return os.str();
}

std::optional<std::string> checkConfigShape(const std::vector<int64_t> &degrees,
                                            size_t numDevices) {
  std::ostringstream os;
  int64_t tasks = 1;
  for (size_t i = 0; i < degrees.size(); ++i) {
    if (degrees[i] < 1) {
      os << "degree " << degrees[i] << " of dimension " << i
         << " must be at least 1";
      return os.str();
    }
    tasks *= degrees[i];
  }
  if (static_cast<int64_t>(numDevices) != tasks) {
    os << "config lists " << numDevices << " device"
       << (numDevices == 1 ? "" : "s") << " but its degrees "
       << formatList(degrees) << " make " << tasks << " task"
       << (tasks == 1 ? "" : "s");
    return os.str();
  }
  return std::nullopt;
}

std::optional<std::string>
checkConfigDevices(const std::vector<int64_t> &devices,
                   int64_t numDevicesDeclared) {
  for (size_t task = 0; task < devices.size(); ++task) {
    int64_t device = devices[task];
    if (device < 0 || device >= numDevicesDeclared) {
      std::ostringstream os;
      os << "device " << device << " of task " << task
         << " is out of range: the module declares " << numDevicesDeclared
         << " device" << (numDevicesDeclared == 1 ? "" : "s");
      return os.str();
    }
  }
  return std::nullopt;
}

std::optional<std::string>
checkConfigForLoops(const std::vector<int64_t> &degrees,
                    const std::vector<int64_t> &loopSizes,
                    const std::vector<std::string> &loopNames) {
  std::ostringstream os;
  if (degrees.size() != loopSizes.size()) {
    os << "config has " << degrees.size() << " degree"
       << (degrees.size() == 1 ? "" : "s") << " but the op has "
       << loopSizes.size() << " dimension"
       << (loopSizes.size() == 1 ? "" : "s");
    return os.str();
  }
  for (size_t i = 0; i < degrees.size(); ++i) {
    auto describe = [&]() {
      os << "dimension " << i;
      if (i < loopNames.size() && !loopNames[i].empty())
        os << " ('" << loopNames[i] << "')";
    };
    if (loopSizes[i] < 0) {
      if (degrees[i] != 1) {
        os << "degree " << degrees[i] << " cannot split ";
        describe();
        os << " of dynamic size";
        return os.str();
      }
      continue;
    }
    if (degrees[i] > 0 && loopSizes[i] % degrees[i] != 0) {
      os << "degree " << degrees[i] << " does not divide ";
      describe();
      os << " of size " << loopSizes[i];
      return os.str();
    }
  }
  return std::nullopt;
}

} // namespace soap
