//===- LargeFunctions.cpp - large functions to the fast code generator ----===//

#include "soap/codegen/LargeFunctions.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/CFG.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

std::unique_ptr<llvm::Module>
soap::codegen::splitOffLargeFunctions(llvm::Module &module,
                                      unsigned minInstructions) {
  llvm::SmallPtrSet<const llvm::Function *, 4> large;
  for (llvm::Function &function : module) {
    if (function.isDeclaration() ||
        function.getInstructionCount() < minInstructions)
      continue;
    // Kernels (loops) keep the optimizing code generator, however large.
    llvm::SmallVector<
        std::pair<const llvm::BasicBlock *, const llvm::BasicBlock *>>
        backedges;
    llvm::FindFunctionBackedges(function, backedges);
    if (backedges.empty())
      large.insert(&function);
  }
  if (large.empty())
    return nullptr;

  // Each object file refers to symbols of the other: every local symbol gets
  // a name and external, hidden linkage (intrinsic globals such as
  // llvm.used stay with the first module).
  unsigned unnamed = 0;
  for (llvm::GlobalValue &value : module.global_values()) {
    if (!value.hasLocalLinkage() || value.getName().starts_with("llvm."))
      continue;
    if (!value.hasName())
      value.setName("soap.local." + llvm::Twine(unnamed++));
    value.setLinkage(llvm::GlobalValue::ExternalLinkage);
    value.setVisibility(llvm::GlobalValue::HiddenVisibility);
  }

  llvm::ValueToValueMapTy map;
  std::unique_ptr<llvm::Module> split =
      llvm::CloneModule(module, map, [&](const llvm::GlobalValue *value) {
        auto *function = llvm::dyn_cast<llvm::Function>(value);
        return function && large.contains(function);
      });
  // Declarations of intrinsic globals would not verify; they are defined in
  // the first module.
  llvm::SmallVector<llvm::GlobalVariable *> intrinsicGlobals;
  for (llvm::GlobalVariable &global : split->globals())
    if (global.isDeclaration() && global.use_empty() &&
        global.getName().starts_with("llvm."))
      intrinsicGlobals.push_back(&global);
  for (llvm::GlobalVariable *global : intrinsicGlobals)
    global->eraseFromParent();

  for (llvm::Function &function : module)
    if (large.contains(&function))
      function.deleteBody();
  return split;
}
