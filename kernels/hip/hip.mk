# hip.mk -- the HIP backend's build. Include it at the top of the Makefile,
# before `BUILD ?= build`:   include kernels/hip/hip.mk
#
#   make                 the sim backend only: no HIP tools needed
#   make HIP=amd         hipcc for $(HIP_ARCH); objects in build/hip-amd
#   make HIP=nvidia      the same .hip sources with nvcc for sm_80 and sm_90
#                        (layers/runtime/hip/hip_compat_cuda.h maps HIP onto CUDA)
#   make hip-check       compile both variants to objects (-c): no GPU needed,
#                        so a kernel that stops compiling fails CI
#
# --jit (layers/runtime/hip/jit.hip) compiles the device headers again at
# run time with hiprtc or nvrtc: their text is embedded, as jit_headers.h.
#
# Debian's hipcc 5.2 (LLVM 15) ships no device library for gfx11: the one
# missing file, oclc_isa_version_1100.bc, holds only the ISA number and is
# made from the gfx90a one. LLVM 15 does not know gfx942 (MI300): with ROCm
# 6 or later, add it: make HIP=amd HIP_ARCH="gfx90a gfx942 gfx1100".

HIP_SRC   := $(wildcard kernels/hip/*.hip layers/runtime/hip/*.hip)
# The device headers (no C library: what hiprtc/nvrtc compile) and the rest.
JIT_HDR   := kernels/hip/device.h kernels/hip/geometry.h kernels/hip/quant.h $(wildcard kernels/hip/*_kernels.h)
HIP_DEPS  := $(JIT_HDR) kernels/hip/hip_common.h layers/runtime/hip/hip_api.h layers/runtime/hip/hip_compat_cuda.h layers/runtime/hip/jit.h build/hip-jit/jit_headers.h
HIP_ARCH  ?= gfx90a gfx1100
CUDA_ARCH ?= 80 90
HIPCC     ?= hipcc
# nvcc: a CUDA toolkit's, or the PyPI wheel nvidia-cuda-nvcc's (CUDA 13).
CUDA_HOME ?= $(or $(shell d=$$(command -v nvcc) && dirname $$(dirname $$d)),\
                  $(shell python3 -c 'import nvidia; print(list(nvidia.__path__)[0] + "/cu13")' 2>/dev/null))
NVCC      ?= $(CUDA_HOME)/bin/nvcc
HIP_FLAGS := -std=c++20 -O2 -I. -Ibuild/hip-jit -DHIPATH_HIP

# Each device header as { "include name", R"(text)" }, for jit.hip.
build/hip-jit/jit_headers.h: $(JIT_HDR)
	@mkdir -p $(dir $@)
	for f in $(JIT_HDR); do printf '{ "%s", R"hipath_jit(' $$f; cat $$f; printf ')hipath_jit" },\n'; done > $@

# The ROCm device library, completed for gfx1100 when the system lacks it.
SYS_DEVLIB := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/amdgcn/bitcode /opt/rocm/amdgcn/bitcode))
HIP_DEVLIB := build/hip-devlib
ifeq ($(wildcard $(SYS_DEVLIB)/oclc_isa_version_1100.bc),)
HIPCC_AMD = $(HIPCC) --rocm-device-lib-path=$(HIP_DEVLIB)
DEVLIB_STAMP := $(HIP_DEVLIB)/oclc_isa_version_1100.bc
$(DEVLIB_STAMP):
	@mkdir -p $(HIP_DEVLIB)
	ln -sf $(SYS_DEVLIB)/*.bc $(HIP_DEVLIB)/
	llvm-dis-15 $(SYS_DEVLIB)/oclc_isa_version_90a.bc -o - | sed 's/i32 9010,/i32 11000,/' | llvm-as-15 -o $@
else
HIPCC_AMD = $(HIPCC)
DEVLIB_STAMP :=
endif

AMD_COMPILE    = $(HIPCC_AMD) $(HIP_FLAGS) $(addprefix --offload-arch=,$(HIP_ARCH)) -c $< -o $@
NVIDIA_COMPILE = $(NVCC) -x cu $(HIP_FLAGS) -DHIPATH_CUDA $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a),code=sm_$(a)) -c $< -o $@

ifneq ($(HIP),)
BUILD   ?= build/hip-$(HIP)
CFLAGS  += -DHIPATH_HIP
HIP_OBJ := $(HIP_SRC:%.hip=$(BUILD)/obj/%.$(HIP).o)
ifeq ($(HIP),amd)
# hiprtc: in libamdhip64 up to ROCm 5, its own library from ROCm 6.
LDLIBS  += -lamdhip64 $(if $(wildcard /opt/rocm/lib/libhiprtc.so /usr/lib/x86_64-linux-gnu/libhiprtc.so),-lhiprtc) -lstdc++
$(BUILD)/obj/%.amd.o: %.hip $(HIP_DEPS) $(DEVLIB_STAMP)
	@mkdir -p $(dir $@)
	$(AMD_COMPILE)
else ifeq ($(HIP),nvidia)
LDLIBS  += -L$(CUDA_HOME)/lib -l:libcudart.so.13 -l:libnvrtc.so.13 -Wl,-rpath,$(CUDA_HOME)/lib -lstdc++
$(BUILD)/obj/%.nvidia.o: %.hip $(HIP_DEPS)
	@mkdir -p $(dir $@)
	$(NVIDIA_COMPILE)
else
$(error HIP=$(HIP): expected HIP=amd or HIP=nvidia)
endif
$(BUILD)/libhipath.a: $(HIP_OBJ)
endif

# Both variants to objects, without a GPU.
HIP_CHECK_DIR := build/hip-check
.PHONY: hip-check
hip-check: $(HIP_SRC:%.hip=$(HIP_CHECK_DIR)/%.amd.o) $(HIP_SRC:%.hip=$(HIP_CHECK_DIR)/%.nvidia.o)
	@echo "hip-check: $(words $(HIP_SRC)) HIP sources compile for $(HIP_ARCH) and sm_$(CUDA_ARCH)"
$(HIP_CHECK_DIR)/%.amd.o: %.hip $(HIP_DEPS) $(DEVLIB_STAMP)
	@mkdir -p $(dir $@)
	$(AMD_COMPILE)
$(HIP_CHECK_DIR)/%.nvidia.o: %.hip $(HIP_DEPS)
	@mkdir -p $(dir $@)
	$(NVIDIA_COMPILE)
