//! Builds `libzigtensor`: one shared library holding the core (compiled for the baseline CPU of the target)
//! and the kernel source compiled once per ISA, each variant exporting its kernel table under a suffixed name.
//!
//!   zig build                      release library in zig-out/lib
//!   zig build -Dchecked=true       CHECKED library (poison and canaries) in zig-out/lib/checked
//!   zig build test                 Zig unit tests for the host variants and for aarch64-linux under qemu
//!   zig build dist                 stripped release libraries for every platform in zig-out/dist/<platform>
const std = @import("std");
const builtin = @import("builtin");
const zon = @import("build.zig.zon");

comptime {
    if (!std.mem.eql(u8, builtin.zig_version_string, zon.minimum_zig_version)) {
        @compileError("zigtensor pins Zig " ++ zon.minimum_zig_version ++ " (build.zig.zon) but this is Zig " ++
            builtin.zig_version_string ++ "; run `bash scripts/dev.sh setup` to install the pinned version");
    }
}

/// An instruction-set variant of the kernels: its suffix and the CPU model it is compiled for.
const Variant = struct {
    name: []const u8,
    arch: std.Target.Cpu.Arch,
    model: *const std.Target.Cpu.Model,
};

/// A platform zigtensor ships a prebuilt library for: the npm/JSR name and the Zig target. The glibc targets
/// name the oldest glibc they support (2.17), so the libraries load on every glibc from 2.17 on.
const Platform = struct { name: []const u8, triple: []const u8 };

const platforms = [_]Platform{
    .{ .name = "linux-x64-gnu", .triple = "x86_64-linux-gnu.2.17" },
    .{ .name = "linux-x64-musl", .triple = "x86_64-linux-musl" },
    .{ .name = "linux-arm64-gnu", .triple = "aarch64-linux-gnu.2.17" },
    .{ .name = "linux-arm64-musl", .triple = "aarch64-linux-musl" },
    .{ .name = "darwin-x64", .triple = "x86_64-macos" },
    .{ .name = "darwin-arm64", .triple = "aarch64-macos" },
    .{ .name = "win32-x64", .triple = "x86_64-windows-gnu" },
};

const variants = [_]Variant{
    .{ .name = "baseline", .arch = .x86_64, .model = &std.Target.x86.cpu.x86_64 },
    .{ .name = "avx2", .arch = .x86_64, .model = &std.Target.x86.cpu.x86_64_v3 },
    .{ .name = "avx512", .arch = .x86_64, .model = &std.Target.x86.cpu.x86_64_v4 },
    .{ .name = "neon", .arch = .aarch64, .model = &std.Target.aarch64.cpu.generic },
};

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const checked = b.option(bool, "checked", "CHECKED build: poison 0xFF and 64 canary bytes 0xA5") orelse false;
    const optimize = b.option(std.builtin.OptimizeMode, "optimize", "Optimization mode") orelse .ReleaseFast;

    const lib = addLibrary(b, target, optimize, checked);
    const install = b.addInstallArtifact(lib, .{
        .dest_dir = .{ .override = .{ .custom = if (checked) "lib/checked" else "lib" } },
    });
    b.getInstallStep().dependOn(&install.step);
    installVariantObjects(b, target, optimize, checked);

    // A library that claims another ABI version, for the binding's refusal test.
    const skew = b.step("abi-skew", "Build a library with a skewed ABI version into zig-out/lib/abi-skew (tests only)");
    const skew_lib = addLibraryWithOptions(b, target, optimize, checked, 1000, null);
    const skew_install = b.addInstallArtifact(skew_lib, .{ .dest_dir = .{ .override = .{ .custom = "lib/abi-skew" } } });
    skew.dependOn(&skew_install.step);

    const test_step = b.step("test", "Run the Zig unit tests (host variants, and aarch64-linux under qemu-user)");
    addHostTests(b, test_step, checked);
    addQemuTests(b, test_step, checked);

    const dist_step = b.step("dist", "Build stripped release libraries for every platform into zig-out/dist/<platform>");
    for (platforms) |platform| {
        const dist_target = b.resolveTargetQuery(std.Target.Query.parse(.{ .arch_os_abi = platform.triple }) catch unreachable);
        const dist_lib = addLibraryWithOptions(b, dist_target, .ReleaseFast, false, 0, true);
        const dist_install = b.addInstallArtifact(dist_lib, .{
            .dest_dir = .{ .override = .{ .custom = b.fmt("dist/{s}", .{platform.name}) } },
            .implib_dir = .disabled,
            .pdb_dir = .disabled,
        });
        dist_step.dependOn(&dist_install.step);
    }
}

/// The target with its CPU model replaced by the one a variant (or the core) is compiled for. The AVX-512
/// variant drops x86-64-v4's `prefer_256_bit` tuning: with it LLVM stores every unaligned 512-bit vector of
/// the kernels as a 256-bit store and a `vextractf64x4` to memory, an extra shuffle per store in the kernels
/// written for the full width (the recurrent cell, softmax, the norms, the fast transcendental functions).
fn withModel(b: *std.Build, target: std.Build.ResolvedTarget, model: *const std.Target.Cpu.Model) std.Build.ResolvedTarget {
    var query = target.query;
    query.cpu_arch = target.result.cpu.arch;
    query.cpu_model = .{ .explicit = model };
    query.cpu_features_add = .empty;
    query.cpu_features_sub = .empty;
    if (model == &std.Target.x86.cpu.x86_64_v4) query.cpu_features_sub.addFeature(@intFromEnum(std.Target.x86.Feature.prefer_256_bit));
    return b.resolveTargetQuery(query);
}

fn baselineModel(arch: std.Target.Cpu.Arch) *const std.Target.Cpu.Model {
    return switch (arch) {
        .x86_64 => &std.Target.x86.cpu.x86_64,
        .aarch64 => &std.Target.aarch64.cpu.generic,
        else => std.Target.Cpu.Model.generic(arch),
    };
}

/// Options every module sees: the variant it is compiled as ("core" for the core), the CHECKED flag, and
/// the names of the variants of the architecture.
fn buildOptions(b: *std.Build, arch: std.Target.Cpu.Arch, isa: []const u8, checked: bool) *std.Build.Module {
    return buildOptionsStep(b, arch, isa, checked).createModule();
}

fn buildOptionsStep(b: *std.Build, arch: std.Target.Cpu.Arch, isa: []const u8, checked: bool) *std.Build.Step.Options {
    var names: std.ArrayList([]const u8) = .empty;
    for (variants) |variant| {
        if (variant.arch == arch) names.append(b.allocator, variant.name) catch @panic("OOM");
    }
    const options = b.addOptions();
    options.addOption([]const u8, "isa", isa);
    options.addOption(bool, "checked", checked);
    options.addOption([]const []const u8, "variants", names.items);
    return options;
}

/// The library: the core compiled for the baseline CPU, linked with one object per variant of the target's
/// architecture. The core's list of variants comes from the same table, so it never names one that is absent.
fn addLibrary(
    b: *std.Build,
    target: std.Build.ResolvedTarget,
    optimize: std.builtin.OptimizeMode,
    checked: bool,
) *std.Build.Step.Compile {
    return addLibraryWithOptions(b, target, optimize, checked, 0, null);
}

/// `abi_skew` is added to the ABI version the library reports; nonzero only for the refusal test. `strip`
/// drops symbols and debug information (the shipped libraries), null keeps the optimize mode's default.
fn addLibraryWithOptions(
    b: *std.Build,
    target: std.Build.ResolvedTarget,
    optimize: std.builtin.OptimizeMode,
    checked: bool,
    abi_skew: u32,
    strip: ?bool,
) *std.Build.Step.Compile {
    const arch = target.result.cpu.arch;
    const core = b.createModule(.{
        .root_source_file = b.path("zig/root.zig"),
        .target = withModel(b, target, baselineModel(arch)),
        .optimize = optimize,
        .link_libc = true,
        .pic = true,
        .strip = strip,
    });
    const options = buildOptionsStep(b, arch, "core", checked);
    options.addOption(u32, "abi_skew", abi_skew);
    core.addImport("build_options", options.createModule());
    const lib = b.addLibrary(.{ .linkage = .dynamic, .name = "zigtensor", .root_module = core });
    for (variants) |variant| {
        if (variant.arch != arch) continue;
        lib.root_module.addObject(addVariantObject(b, target, optimize, checked, variant, strip));
    }
    return lib;
}

fn addVariantObject(
    b: *std.Build,
    target: std.Build.ResolvedTarget,
    optimize: std.builtin.OptimizeMode,
    checked: bool,
    variant: Variant,
    strip: ?bool,
) *std.Build.Step.Compile {
    const module = b.createModule(.{
        .root_source_file = b.path("zig/variant.zig"),
        .target = withModel(b, target, variant.model),
        .optimize = optimize,
        .link_libc = true,
        .pic = true,
        .strip = strip,
    });
    module.addImport("build_options", buildOptions(b, target.result.cpu.arch, variant.name, checked));
    return b.addObject(.{ .name = b.fmt("zigtensor_{s}", .{variant.name}), .root_module = module });
}

/// Installs the variant objects (zig-out/obj) so that a test can prove the baseline one holds no AVX
/// instruction, and that the check sees the AVX ones.
fn installVariantObjects(
    b: *std.Build,
    target: std.Build.ResolvedTarget,
    optimize: std.builtin.OptimizeMode,
    checked: bool,
) void {
    for (variants) |variant| {
        if (variant.arch != target.result.cpu.arch) continue;
        const object = addVariantObject(b, target, optimize, checked, variant, null);
        const dir = if (checked) "obj/checked" else "obj";
        const install = b.addInstallFile(object.getEmittedBin(), b.fmt("{s}/zigtensor_{s}.o", .{ dir, variant.name }));
        b.getInstallStep().dependOn(&install.step);
    }
}

/// A test binary over the core and the kernels, compiled for one CPU model of one target.
fn addTestBinary(
    b: *std.Build,
    target: std.Build.ResolvedTarget,
    model: *const std.Target.Cpu.Model,
    isa: []const u8,
    checked: bool,
) *std.Build.Step.Compile {
    const module = b.createModule(.{
        .root_source_file = b.path("zig/tests.zig"),
        .target = withModel(b, target, model),
        .optimize = .ReleaseSafe,
        .link_libc = true,
    });
    module.addImport("build_options", buildOptions(b, target.result.cpu.arch, isa, checked));
    return b.addTest(.{ .name = b.fmt("test-{s}", .{isa}), .root_module = module });
}

/// Host tests: every variant of the host architecture that the host CPU can run.
fn addHostTests(b: *std.Build, test_step: *std.Build.Step, checked: bool) void {
    const host = b.graph.host;
    for (variants) |variant| {
        if (variant.arch != host.result.cpu.arch) continue;
        if (!hostRuns(host.result, variant.model)) {
            const note = b.addSystemCommand(&.{ "echo", b.fmt("zig tests: skipping the {s} variant, this CPU cannot run it", .{variant.name}) });
            test_step.dependOn(&note.step);
            continue;
        }
        const run = b.addRunArtifact(addTestBinary(b, host, variant.model, variant.name, checked));
        test_step.dependOn(&run.step);
    }
}

/// Whether the host has the headline features of a variant's CPU model (the model's own feature list also
/// names tuning flags that no real CPU reports).
fn hostRuns(host: std.Target, model: *const std.Target.Cpu.Model) bool {
    const x86 = std.Target.x86;
    const needed: []const x86.Feature = if (model == &x86.cpu.x86_64_v3)
        &.{ .avx2, .fma, .f16c, .bmi2 }
    else if (model == &x86.cpu.x86_64_v4)
        &.{ .avx2, .fma, .f16c, .bmi2, .avx512f, .avx512bw, .avx512dq, .avx512vl }
    else
        &.{};
    for (needed) |feature| {
        if (!x86.featureSetHas(host.cpu.features, feature)) return false;
    }
    return true;
}

/// aarch64-linux tests run explicitly through `qemu-aarch64`; a missing qemu fails the step with a message
/// instead of the silent skip that `-fqemu` would give.
fn addQemuTests(b: *std.Build, test_step: *std.Build.Step, checked: bool) void {
    if (b.graph.host.result.cpu.arch == .aarch64) return;
    const target = b.resolveTargetQuery(.{ .cpu_arch = .aarch64, .os_tag = .linux, .abi = .musl });
    const binary = addTestBinary(b, target, &std.Target.aarch64.cpu.generic, "neon", checked);
    const skip = b.option(bool, "skip-qemu", "Skip the aarch64 tests under qemu, saying so") orelse false;
    if (skip) {
        const note = b.addSystemCommand(&.{ "echo", "zig tests: SKIPPED aarch64 under qemu (-Dskip-qemu=true)" });
        test_step.dependOn(&note.step);
        return;
    }
    const qemu = b.findProgram(&.{ "qemu-aarch64", "qemu-aarch64-static" }, &.{}) catch {
        const fail = b.addFail("zig tests for aarch64 need qemu-user (qemu-aarch64) and it is not installed: " ++
            "run `apt-get install qemu-user` (scripts/dev.sh does this) or pass -Dskip-qemu=true to skip them knowingly");
        test_step.dependOn(&fail.step);
        return;
    };
    const run = b.addSystemCommand(&.{qemu});
    run.addArtifactArg(binary);
    // Inherited output: the test binary's report goes straight to the terminal (a checked run would print its
    // stderr under "failed command" although it passed); a nonzero exit still fails the step.
    run.stdio = .inherit;
    test_step.dependOn(&run.step);
}
