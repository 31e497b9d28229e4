#if canImport(Glibc)
import Glibc
#endif

/// The `malloc` a node allocates with. A third of a busy node's CPU is the Swift runtime's allocations,
/// retains and releases, and jemalloc spends less of it than glibc's malloc (docs/operations.md, "Memory
/// allocator"), so `parley node --allocator jemalloc` starts itself again with Debian's `libjemalloc2`
/// preloaded, as the image does with `LD_PRELOAD`. Preloaded rather than linked: a binary linked with it hangs
/// under libfaketime (both interpose the clock at start), which the replay-window tests run nodes with, and it
/// would need the library on every machine it is copied to.
public enum MemoryAllocator {
    /// What `/status` reports (`allocator`): "jemalloc 5.3.0-…" or "glibc 2.36"; read once, when first asked.
    public static let inUse: String = detect()

    /// Where Debian's `libjemalloc2` puts the library, if this machine has it.
    public static let jemallocLibrary: String? = {
        #if canImport(Glibc)
        ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"]
            .map { $0 + "/libjemalloc.so.2" }
            .first { access($0, R_OK) == 0 }
        #else
        nil
        #endif
    }()

    /// Replaces this process with the same program and arguments, jemalloc preloaded (the process id stays, so
    /// a supervisor or a test that started it sees nothing), when the C library's malloc is in use, the
    /// machine has jemalloc, and the environment names no `LD_PRELOAD` of its own — one set, even empty, is the
    /// operator's choice (the image's opt-out, libfaketime in the tests) and is kept. Returns when it does not.
    public static func preferJemalloc() {
        #if canImport(Glibc)
        guard !inUse.hasPrefix("jemalloc"), getenv("LD_PRELOAD") == nil, let library = jemallocLibrary, CommandLine.argc > 0 else { return }
        setenv("LD_PRELOAD", library, 1)
        execv("/proc/self/exe", CommandLine.unsafeArgv)
        // Only when the exec failed: go on as we are.
        unsetenv("LD_PRELOAD")
        #endif
    }

    private typealias MallctlFunction = @convention(c) (
        UnsafePointer<CChar>?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?, UnsafeMutableRawPointer?, Int
    ) -> Int32
    private typealias VersionFunction = @convention(c) () -> UnsafePointer<CChar>?

    private static func detect() -> String {
        #if canImport(Glibc)
        let global = UnsafeMutableRawPointer(bitPattern: 0)  // RTLD_DEFAULT: the process's lookup order
        // RTLD_NOLOAD: a handle only if the library is already in the process (linked or preloaded).
        if let library = dlopen("libjemalloc.so.2", RTLD_NOW | RTLD_NOLOAD) {
            defer { dlclose(library) }
            // The process's malloc is jemalloc's, not merely jemalloc loaded beside the C library's.
            if let ours = dlsym(library, "malloc"), ours == dlsym(global, "malloc"), let mallctl = dlsym(library, "mallctl") {
                let call = unsafeBitCast(mallctl, to: MallctlFunction.self)
                var version: UnsafePointer<CChar>?
                var size = MemoryLayout<UnsafePointer<CChar>?>.size
                if call("version", &version, &size, nil, 0) == 0, let version {
                    return "jemalloc " + String(cString: version)
                }
                return "jemalloc"
            }
        }
        if let symbol = dlsym(global, "gnu_get_libc_version"),
           let version = unsafeBitCast(symbol, to: VersionFunction.self)() {
            return "glibc " + String(cString: version)
        }
        #endif
        return "libc"
    }
}
