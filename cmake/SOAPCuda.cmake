# Finds what libsoaprt_gpu needs: the CUDA toolkit (>= 12: cudart, cuBLAS,
# cuBLASLt), cuDNN 9 and NCCL. Sets SOAP_HAVE_CUDA, and for soap-translate
# SOAP_GPU_LINK_LIBRARIES (the libraries GPU executables link, '|'-separated)
# and SOAP_GPU_RPATH_DIRS (their folders). -DSOAP_ENABLE_GPU=OFF skips it.
option(SOAP_ENABLE_GPU "Build libsoaprt_gpu when CUDA, cuDNN and NCCL are found" ON)
set(SOAP_HAVE_CUDA OFF)
set(SOAP_GPU_LINK_LIBRARIES "")
set(SOAP_GPU_RPATH_DIRS "")
if(NOT SOAP_ENABLE_GPU)
  message(STATUS "GPU runtime: disabled (SOAP_ENABLE_GPU=OFF)")
  return()
endif()

find_package(CUDAToolkit QUIET)
set(_soap_cuda_hints /usr/local/cuda/lib64 /usr/local/cuda-13.0/lib
  /usr/local/cuda/lib)
find_path(SOAP_CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
find_library(SOAP_CUDNN_LIBRARY cudnn HINTS ${_soap_cuda_hints})
find_path(SOAP_NCCL_INCLUDE_DIR nccl.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
find_library(SOAP_NCCL_LIBRARY nccl HINTS ${_soap_cuda_hints})

set(_soap_missing "")
if(NOT CUDAToolkit_FOUND)
  list(APPEND _soap_missing "the CUDA toolkit")
elseif(CUDAToolkit_VERSION VERSION_LESS 12.0)
  list(APPEND _soap_missing "CUDA >= 12 (found ${CUDAToolkit_VERSION})")
elseif(NOT TARGET CUDA::cudart OR NOT TARGET CUDA::cublas OR
       NOT TARGET CUDA::cublasLt)
  list(APPEND _soap_missing "cudart/cuBLAS/cuBLASLt")
endif()
if(NOT SOAP_CUDNN_INCLUDE_DIR OR NOT SOAP_CUDNN_LIBRARY)
  list(APPEND _soap_missing "cuDNN (cudnn.h, libcudnn)")
endif()
if(NOT SOAP_NCCL_INCLUDE_DIR OR NOT SOAP_NCCL_LIBRARY)
  list(APPEND _soap_missing "NCCL (nccl.h, libnccl)")
endif()
if(_soap_missing)
  string(REPLACE ";" ", " _soap_missing "${_soap_missing}")
  message(STATUS "GPU runtime: not built, missing ${_soap_missing}; "
                 "modules with soap.target = \"gpu\" cannot be linked")
  return()
endif()

set(SOAP_HAVE_CUDA ON)
set(_soap_libraries "")
set(_soap_dirs "")
foreach(_soap_library ${CUDA_cudart_LIBRARY} ${CUDA_cublas_LIBRARY}
        ${CUDA_cublasLt_LIBRARY} ${SOAP_CUDNN_LIBRARY} ${SOAP_NCCL_LIBRARY})
  list(APPEND _soap_libraries ${_soap_library})
  get_filename_component(_soap_dir ${_soap_library} DIRECTORY)
  list(APPEND _soap_dirs ${_soap_dir})
endforeach()
list(REMOVE_DUPLICATES _soap_dirs)
string(REPLACE ";" "|" SOAP_GPU_LINK_LIBRARIES "${_soap_libraries}")
string(REPLACE ";" "|" SOAP_GPU_RPATH_DIRS "${_soap_dirs}")
message(STATUS "GPU runtime: CUDA ${CUDAToolkit_VERSION}, ${SOAP_CUDNN_LIBRARY}, "
               "${SOAP_NCCL_LIBRARY}")
