// A GPU training step written by hand at the level --soap-lower-gpu emits
// before the upstream GPU pipeline: loss = w . x (soaprt_gpu_matmul_f32 on
// a zeroed device scalar) and w' = w - 0.1 x (a gpu.launch_func kernel).
// Arguments: w (param), x (input); results: loss, w'. Each step lowers the
// loss by 0.1 |x|^2, which gpu-driver.test checks on a GPU.
module attributes {gpu.container_module, soap.target = "gpu"} {
  llvm.mlir.global external constant @soap_model_info("{\22entry\22:\22train_step\22,\22target\22:\22gpu\22,\22num_devices\22:1,\22args\22:[{\22role\22:\22param\22,\22name\22:\22w\22,\22shape\22:[4],\22dtype\22:\22f32\22,\22init\22:\22fan-in\22},{\22role\22:\22input\22,\22name\22:\22x\22,\22shape\22:[4],\22dtype\22:\22f32\22}],\22results\22:[{\22role\22:\22loss\22,\22name\22:\22loss\22,\22shape\22:[],\22dtype\22:\22f32\22},{\22role\22:\22param\22,\22name\22:\22w\22,\22shape\22:[4],\22dtype\22:\22f32\22}],\22ops\22:[]}\00") {addr_space = 0 : i32}
  llvm.mlir.global external constant @soap_init_data() {addr_space = 0 : i32} : !llvm.array<2 x ptr> {
    %null = llvm.mlir.zero : !llvm.ptr
    %0 = llvm.mlir.undef : !llvm.array<2 x ptr>
    %1 = llvm.insertvalue %null, %0[0] : !llvm.array<2 x ptr>
    %2 = llvm.insertvalue %null, %1[1] : !llvm.array<2 x ptr>
    llvm.return %2 : !llvm.array<2 x ptr>
  }
  llvm.func @mgpuStreamCreate() -> !llvm.ptr
  llvm.func @mgpuMemset32(!llvm.ptr, i32, i64, !llvm.ptr)
  llvm.func @soaprt_gpu_matmul_f32(i64, i64, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64)

  func.func @soap_train_step_packed(%buffers: !llvm.ptr) {
    %p1 = llvm.getelementptr %buffers[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
    %p2 = llvm.getelementptr %buffers[2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
    %p3 = llvm.getelementptr %buffers[3] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
    %w = llvm.load %buffers : !llvm.ptr -> !llvm.ptr
    %x = llvm.load %p1 : !llvm.ptr -> !llvm.ptr
    %loss = llvm.load %p2 : !llvm.ptr -> !llvm.ptr
    %next = llvm.load %p3 : !llvm.ptr -> !llvm.ptr
    %stream = llvm.call @mgpuStreamCreate() : () -> !llvm.ptr
    %zero = llvm.mlir.constant(0 : i32) : i32
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %c4 = llvm.mlir.constant(4 : i64) : i64
    llvm.call @mgpuMemset32(%loss, %zero, %c1, %stream) : (!llvm.ptr, i32, i64, !llvm.ptr) -> ()
    // loss[1x1] += w[1x4] * x[4x1] (exact FP32).
    llvm.call @soaprt_gpu_matmul_f32(%c0, %c1, %c1, %c4, %w, %c4, %c1, %x, %c1, %c0, %loss, %c1, %c1) : (i64, i64, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64) -> ()
    %one = arith.constant 1 : index
    %four = arith.constant 4 : index
    gpu.launch_func @kernels::@sgd blocks in (%one, %one, %one) threads in (%four, %one, %one) args(%w : !llvm.ptr, %x : !llvm.ptr, %next : !llvm.ptr)
    return
  }

  gpu.module @kernels {
    gpu.func @sgd(%w: !llvm.ptr, %x: !llvm.ptr, %next: !llvm.ptr) kernel {
      %i = gpu.thread_id x
      %index = arith.index_cast %i : index to i64
      %pw = llvm.getelementptr %w[%index] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %px = llvm.getelementptr %x[%index] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %pn = llvm.getelementptr %next[%index] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %vw = llvm.load %pw : !llvm.ptr -> f32
      %vx = llvm.load %px : !llvm.ptr -> f32
      %rate = arith.constant 0.1 : f32
      %step = arith.mulf %rate, %vx : f32
      %updated = arith.subf %vw, %step : f32
      llvm.store %updated, %pn : f32, !llvm.ptr
      gpu.return
    }
  }
}
