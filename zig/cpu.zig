//! CPU detection: which kernel variants this CPU and operating system can run. On x86-64 the CPU bits come
//! from cpuid and the OS's consent from xgetbv (YMM state for AVX2, opmask and ZMM state for AVX-512); on
//! aarch64 Linux from the HWCAP auxiliary vector, and NEON is architectural on Apple silicon.
const std = @import("std");
const builtin = @import("builtin");
const Isa = @import("isa.zig").Isa;

/// The set of variants the running CPU supports, as a mask of `Isa.bit`.
pub fn supportedMask() u32 {
    return switch (builtin.cpu.arch) {
        .x86_64 => x86Mask(),
        .aarch64 => aarch64Mask(),
        else => 0,
    };
}

const CpuidResult = struct { eax: u32, ebx: u32, ecx: u32, edx: u32 };

fn cpuid(leaf: u32, subleaf: u32) CpuidResult {
    var eax: u32 = undefined;
    var ebx: u32 = undefined;
    var ecx: u32 = undefined;
    var edx: u32 = undefined;
    asm volatile ("cpuid"
        : [_] "={eax}" (eax),
          [_] "={ebx}" (ebx),
          [_] "={ecx}" (ecx),
          [_] "={edx}" (edx),
        : [_] "{eax}" (leaf),
          [_] "{ecx}" (subleaf),
    );
    return .{ .eax = eax, .ebx = ebx, .ecx = ecx, .edx = edx };
}

fn xgetbv0() u32 {
    var eax: u32 = undefined;
    var edx: u32 = undefined;
    asm volatile ("xgetbv"
        : [_] "={eax}" (eax),
          [_] "={edx}" (edx),
        : [_] "{ecx}" (@as(u32, 0)),
    );
    return eax;
}

fn hasBits(value: u32, comptime bits: []const u5) bool {
    inline for (bits) |b| {
        if (value & (@as(u32, 1) << b) == 0) return false;
    }
    return true;
}

/// The avx2 variant is compiled for x86-64-v3 and the avx512 one for x86-64-v4, so each needs every feature
/// of its level, not only the headline one.
fn x86Mask() u32 {
    if (builtin.cpu.arch != .x86_64) return 0;
    var mask = Isa.baseline.bit();
    const max_leaf = cpuid(0, 0).eax;
    if (max_leaf < 7) return mask;
    const leaf1 = cpuid(1, 0);
    const leaf7 = cpuid(7, 0);
    const ext = cpuid(0x80000001, 0);
    // SSE3, SSSE3, FMA, CX16, SSE4.1, SSE4.2, MOVBE, POPCNT, XSAVE, OSXSAVE, AVX, F16C
    const v3_ecx = hasBits(leaf1.ecx, &.{ 0, 9, 12, 13, 19, 20, 22, 23, 26, 27, 28, 29 });
    // BMI1, AVX2, BMI2
    const v3_ebx = hasBits(leaf7.ebx, &.{ 3, 5, 8 });
    // LAHF/SAHF, LZCNT
    const v3_ext = hasBits(ext.ecx, &.{ 0, 5 });
    if (!(v3_ecx and v3_ebx and v3_ext)) return mask;
    const xcr0 = xgetbv0();
    // XMM and YMM state enabled by the OS.
    if (xcr0 & 0x6 != 0x6) return mask;
    mask |= Isa.avx2.bit();
    // AVX512F, AVX512DQ, AVX512CD, AVX512BW, AVX512VL
    const v4_ebx = hasBits(leaf7.ebx, &.{ 16, 17, 28, 30, 31 });
    // Opmask, upper ZMM0-15 and ZMM16-31 state enabled by the OS.
    if (v4_ebx and xcr0 & 0xE0 == 0xE0) mask |= Isa.avx512.bit();
    return mask;
}

fn aarch64Mask() u32 {
    if (builtin.cpu.arch != .aarch64) return 0;
    if (builtin.os.tag.isDarwin()) return Isa.neon.bit();
    if (builtin.os.tag != .linux) return 0;
    const at_hwcap = 16;
    const hwcap_asimd = 1 << 1;
    const hwcap = std.c.getauxval(at_hwcap);
    return if (hwcap & hwcap_asimd != 0) Isa.neon.bit() else 0;
}

test "the CPU running the tests supports the variant they were compiled for" {
    const variant_isa = Isa.fromName(@import("build_options").isa).?;
    try std.testing.expect(supportedMask() & variant_isa.bit() != 0);
}
