# hip.mk -- the HIP backend's build. Include it at the top of the Makefile,
# before `BUILD ?= build`:   include kernels/hip/hip.mk
#
#   make                 the sim backend only: no HIP tools needed
#   make HIP=amd         for $(HIP_ARCH) (gfx90a gfx942 gfx1100); objects in build/hip-amd
#   make HIP=nvidia      the same .hip sources with nvcc for sm_80 and sm_90
#                        (layers/runtime/hip/hip_compat_cuda.h maps HIP onto CUDA)
#   make HIP=cpu         the same .hip sources with the host compiler, the
#                        kernels on the CPU (hip_cpu_api.h); build/hip-cpu/hipath
#   make hip-check       compile every variant to objects (-c): no GPU needed,
#                        so a kernel that stops compiling fails CI
#
# --jit (layers/runtime/hip/jit.hip) compiles the device headers again at
# run time with hiprtc or nvrtc: their text is embedded, as jit_headers.h.
#
# AMD compilers: Debian's hipcc (ROCm 5.2, LLVM 15) knows gfx90a and
# gfx1100 but not gfx942 (MI300), which LLVM 15 predates; Debian bookworm's
# clang-19 compiles HIP for all three with the same HIP 5.2 headers and
# device library. So a HIP_ARCH with gfx942 builds with clang-19, one
# without it with hipcc (make HIP=amd HIP_ARCH="gfx90a gfx1100"); a ROCm 6
# hipcc knows gfx942 too: make HIP=amd AMD_CXX=hipcc. clang-19 emits code
# object v5, which ROCm 6 should load (unverified: no GPU here). clang-19
# refuses gfx950 (MI355). The device library's two missing files: docs/hip-cpu.md.

HIP_SRC   := $(wildcard kernels/hip/*.hip layers/runtime/hip/*.hip)
# The device headers (no C library: what hiprtc/nvrtc compile) and the rest.
JIT_HDR   := kernels/hip/device.h kernels/hip/geometry.h kernels/hip/quant.h kernels/hip/paged.h $(wildcard kernels/hip/*_kernels.h)
# The C headers the host code includes (the driver table, kcost) too: a
# change in them must rebuild every variant's objects.
HIP_DEPS  := $(JIT_HDR) kernels/backend.h layers/runtime/runtime.h $(wildcard layers/common/*.h) layers/gpu/profile.h kernels/hip/hip_common.h layers/runtime/hip/hip_compat_cuda.h layers/runtime/hip/hip_api.h layers/runtime/hip/jit.h build/hip-jit/jit_headers.h
HIP_ARCH  ?= gfx90a gfx942 gfx1100
# What hip-check builds with hipcc as well.
HIPCC_ARCH := gfx90a gfx1100
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
	for f in $(JIT_HDR); do printf '{ "%s", R"hipath_jit(' $$f; cat $$f; printf ')hipath_jit" },\n'; done > $@.tmp && mv $@.tmp $@

# The ROCm device library, completed where the system's lacks an arch's ISA
# file (Debian's: gfx1100 and gfx942). The file holds only the ISA number
# (major*1000 + minor*100 + stepping), so it is made from a sibling's:
# ISA_<arch> is the sibling, its number and the new one.
SYS_DEVLIB := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/amdgcn/bitcode /opt/rocm/amdgcn/bitcode))
# Where include/hip is: /usr (Debian) or /opt/rocm.
ROCM_PATH  := $(patsubst %/lib/x86_64-linux-gnu,%,$(SYS_DEVLIB:%/amdgcn/bitcode=%))
HIP_DEVLIB := build/hip-devlib
ISA_1100   := 90a 9010 11000
ISA_942    := 940 9400 9402
DEVLIB_MISSING := $(foreach a,1100 942,$(if $(wildcard $(SYS_DEVLIB)/oclc_isa_version_$(a).bc),,$(a)))
DEVLIB_STAMP := $(DEVLIB_MISSING:%=$(HIP_DEVLIB)/oclc_isa_version_%.bc)
DEVLIB_FLAG  := --rocm-device-lib-path=$(if $(DEVLIB_MISSING),$(HIP_DEVLIB),$(SYS_DEVLIB))
$(HIP_DEVLIB)/.links:
	@mkdir -p $(@D)
	ln -sf $(SYS_DEVLIB)/*.bc $(@D)/
	@touch $@
$(DEVLIB_STAMP): $(HIP_DEVLIB)/oclc_isa_version_%.bc: | $(HIP_DEVLIB)/.links
	llvm-dis-15 $(SYS_DEVLIB)/oclc_isa_version_$(word 1,$(ISA_$*)).bc -o - | \
	  sed 's/i32 $(word 2,$(ISA_$*)),/i32 $(word 3,$(ISA_$*)),/' | llvm-as-15 -o $@

AMD_CXX ?= $(if $(filter gfx942,$(HIP_ARCH)),clang++-19,$(HIPCC))
# $(call amd_compile,COMPILER,ARCHS); clang needs to be told it is HIP and where ROCm is, hipcc does that.
amd_compile = $(1) $(if $(filter clang%,$(notdir $(1))),-x hip --rocm-path=$(ROCM_PATH)) $(DEVLIB_FLAG) $(HIP_FLAGS) \
              $(addprefix --offload-arch=,$(2)) -c $< -o $@
AMD_COMPILE    = $(call amd_compile,$(AMD_CXX),$(HIP_ARCH))
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
else ifeq ($(HIP),cpu)
# The host side on the CPU: the same sources by the host compiler against
# hip_cpu_api.h, the kernels run by hip_cpu.h (docs/hip-cpu.md); --jit has
# no compiler here (jit_cpu.cpp instead of jit.hip).
HIP_CPU_API := layers/runtime/hip/hip_cpu_api.h layers/runtime/hip/hip_cpu.h
HIP_OBJ := $(filter-out %/jit.cpu.o,$(HIP_OBJ)) $(BUILD)/obj/layers/runtime/hip/jit_cpu.cpu.o
LDLIBS  += -lstdc++
# -MMD: the host code includes the C layers' headers (runtime.h's driver
# table, backend.h's kcost): a change there must rebuild it (the Makefile
# includes $(BUILD)/obj's .d files).
$(BUILD)/obj/%.cpu.o: %.hip $(HIP_DEPS) $(HIP_CPU_API)
	@mkdir -p $(dir $@)
	$(CXX) -x c++ $(HIP_FLAGS) -DHIPATH_HIP_CPU -g -Wall -Wextra -Wno-missing-field-initializers -Wno-format-truncation $(SAN) -MMD -MP -c $< -o $@
$(BUILD)/obj/%.cpu.o: %.cpp layers/runtime/hip/jit.h
	@mkdir -p $(dir $@)
	$(CXX) $(HIP_FLAGS) -g -Wall -Wextra $(SAN) -c $< -o $@
else
$(error HIP=$(HIP): expected HIP=amd, HIP=nvidia or HIP=cpu)
endif
$(BUILD)/libhipath.a: $(HIP_OBJ)
endif

# HIP=cpu under AddressSanitizer + UBSan, as tests/check_hip_host.sh runs it.
HIP_HOST_BUILD := build/hip-cpu/host-asan
.PHONY: hip-host
hip-host:
	@$(MAKE) --no-print-directory HIP=cpu BUILD=$(HIP_HOST_BUILD) OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" $(HIP_HOST_BUILD)/hipath

# Every variant to objects, without a GPU: AMD as make HIP=amd builds it,
# hipcc for what it knows, nvcc.
HIP_CHECK_DIR := build/hip-check
.PHONY: hip-check
hip-check: $(foreach v,amd hipcc nvidia,$(HIP_SRC:%.hip=$(HIP_CHECK_DIR)/%.$(v).o))
	@echo "hip-check: $(words $(HIP_SRC)) HIP sources compile for $(HIP_ARCH) ($(AMD_CXX)), $(HIPCC_ARCH) (hipcc) and sm_$(CUDA_ARCH)"
$(HIP_CHECK_DIR)/%.amd.o: %.hip $(HIP_DEPS) $(DEVLIB_STAMP)
	@mkdir -p $(dir $@)
	$(AMD_COMPILE)
$(HIP_CHECK_DIR)/%.hipcc.o: %.hip $(HIP_DEPS) $(DEVLIB_STAMP)
	@mkdir -p $(dir $@)
	$(call amd_compile,$(HIPCC),$(HIPCC_ARCH))
$(HIP_CHECK_DIR)/%.nvidia.o: %.hip $(HIP_DEPS)
	@mkdir -p $(dir $@)
	$(NVIDIA_COMPILE)
