//! The Linux namespaces a pod's processes live in, as a container runtime
//! makes them (runc's `nsexec`, in threads rather than a re-executed
//! binary):
//!
//! - [`PodNetwork`]: one network namespace per pod, made by a thread of
//!   the server and kept by its descriptor for the pod's life; the
//!   kubelet's probers join it from threads of their own. Its `lo` carries the
//!   pod IP and the `kubernetes` Service IP, where the server itself
//!   listens (the listener is opened in the namespace, so the server is
//!   reached without a route). Two pods both bind `:8081`; nothing routes
//!   off the machine, since the namespace has no other device.
//! - [`ContainerShim`]: one thread per container, in its own mount and UTS
//!   namespaces joined to the pod's network: the hostname is the pod's
//!   name and the volumes are bind-mounted at their `mountPath`s (a path
//!   missing on the host is made inside a private tmpfs over its nearest
//!   existing directory, so the host's tree is never written). Each
//!   instance of the container is forked from a thread of its own into a
//!   new PID namespace where it is PID 1, with `PR_SET_PDEATHSIG`: when the server
//!   dies, even by SIGKILL, the kernel kills the process and with it
//!   everything in its PID namespace, so nothing outlives the server.
//!
//! Namespaces of these kinds need `CAP_SYS_ADMIN`; without it every call
//! here fails with the kernel's error, which the kubelet reports on the
//! pod.

use std::ffi::CString;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;

use super::netlink;

/// Work run on a namespace's own thread.
type Job = Box<dyn FnOnce() + Send>;

/// A thread that stays in the namespaces it entered and runs jobs there.
struct NsThread {
    jobs: mpsc::Sender<Job>,
}

impl NsThread {
    /// Starts the thread, runs `enter` on it, and returns once it has.
    fn start<T: Send + 'static>(
        name: String,
        enter: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> io::Result<(NsThread, T)> {
        let (jobs, incoming) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::channel();
        thread::Builder::new().name(name).spawn(move || {
            let entered = enter();
            let ok = entered.is_ok();
            let _ = ready_tx.send(entered);
            if ok {
                // Ends when the handle (the sender) is dropped.
                for job in incoming {
                    job();
                }
            }
        })?;
        let value = ready_rx
            .recv()
            .map_err(|_| io::Error::other("the namespace thread ended"))??;
        Ok((NsThread { jobs }, value))
    }

    /// Runs `f` on the thread and waits for its answer.
    fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> io::Result<T> {
        let (tx, rx) = mpsc::channel();
        self.jobs
            .send(Box::new(move || {
                let _ = tx.send(f());
            }))
            .map_err(|_| io::Error::other("the namespace thread ended"))?;
        rx.recv()
            .map_err(|_| io::Error::other("the namespace thread ended"))
    }
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"))
}

/// A pod's network namespace.
pub(crate) struct PodNetwork {
    ns: OwnedFd,
}

impl PodNetwork {
    /// A new namespace whose `lo` has `ip` and each of `service_ips`;
    /// returns it with a listener on each `(service IP, port)` of
    /// `listen`, opened inside it.
    pub(crate) fn create(
        pod: &str,
        ip: Ipv4Addr,
        service_ips: Vec<Ipv4Addr>,
        listen: Vec<SocketAddr>,
    ) -> io::Result<(PodNetwork, Vec<TcpListener>)> {
        // The thread ends once it made the namespace; the descriptor keeps
        // the namespace for the pod's life.
        let (_thread, (ns, listeners)) = NsThread::start(format!("net-{pod}"), move || {
            // SAFETY: unshare(2) affects only the calling thread here.
            check(unsafe { libc::unshare(libc::CLONE_NEWNET) })?;
            let mut addresses = vec![ip];
            addresses.extend(service_ips);
            netlink::loopback_up_with(&addresses)?;
            let ns = std::fs::File::open("/proc/thread-self/ns/net")?;
            let listeners = listen
                .into_iter()
                .map(TcpListener::bind)
                .collect::<io::Result<Vec<_>>>()?;
            Ok((OwnedFd::from(ns), listeners))
        })?;
        Ok((PodNetwork { ns }, listeners))
    }

    /// Runs `work` on a new thread that has joined the pod's network, so
    /// its connections reach the pod's IP (how the kubelet probes it).
    pub(crate) fn spawn_in(
        &self,
        name: String,
        work: impl FnOnce() + Send + 'static,
    ) -> io::Result<()> {
        let ns = self.duplicate()?;
        thread::Builder::new().name(name).spawn(move || {
            // SAFETY: setns(2) on the calling thread only, with a
            // namespace descriptor it owns.
            match check(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }) {
                Ok(()) => work(),
                Err(e) => tracing::warn!(error = %e, "cannot join a pod's network"),
            }
        })?;
        Ok(())
    }

    fn duplicate(&self) -> io::Result<OwnedFd> {
        self.ns.try_clone()
    }
}

/// A bind mount a container gets: `host` appears at `container_path`.
#[derive(Clone, Debug)]
pub(crate) struct BindMount {
    pub host: PathBuf,
    pub container_path: PathBuf,
    pub read_only: bool,
}

/// One container's namespaces, and the thread its instances fork from.
pub(crate) struct ContainerShim {
    thread: NsThread,
}

impl ContainerShim {
    /// Enters new mount and UTS namespaces joined to `network`, sets the
    /// hostname and makes the mounts; with `read_only_root` every mount
    /// but the writable volumes is made read-only
    /// (`readOnlyRootFilesystem`). `scratch` is a directory of the
    /// server's own where tmpfs shadows are staged.
    pub(crate) fn start(
        name: String,
        network: &PodNetwork,
        hostname: String,
        mounts: Vec<BindMount>,
        read_only_root: bool,
        scratch: PathBuf,
    ) -> io::Result<ContainerShim> {
        let net = network.duplicate()?;
        let (thread, ()) = NsThread::start(name, move || {
            // SAFETY: unshare(2) and setns(2) on the calling thread only;
            // CLONE_NEWNS implies CLONE_FS, unshared for this thread.
            check(unsafe { libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWUTS) })?;
            check(unsafe { libc::setns(net.as_raw_fd(), libc::CLONE_NEWNET) })?;
            drop(net);
            let host = hostname.as_bytes();
            // SAFETY: the buffer is valid for its length.
            check(unsafe { libc::sethostname(host.as_ptr().cast(), host.len()) })?;
            // Nothing mounted here propagates back to the host.
            let root = c_path(Path::new("/"))?;
            // SAFETY: mount(2) with valid C strings and null data.
            check(unsafe {
                libc::mount(
                    std::ptr::null(),
                    root.as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                )
            })?;
            let mut shadows = Shadows {
                scratch,
                roots: Vec::new(),
            };
            for m in &mounts {
                shadows.make_dir(&m.container_path)?;
                bind(&m.host, &m.container_path, m.read_only)?;
            }
            if read_only_root {
                // After the mounts, whose points may need new directories;
                // then the writable volumes are opened again.
                set_read_only(Path::new("/"), true)?;
                for m in mounts.iter().filter(|m| !m.read_only) {
                    set_read_only(&m.container_path, false)?;
                }
            }
            Ok(())
        })?;
        Ok(ContainerShim { thread })
    }

    /// Starts `argv` in the container's namespaces (not its PID
    /// namespace), as an `exec` probe runs; its stdout is piped.
    pub(crate) fn exec(&self, argv: &[String]) -> io::Result<std::process::Child> {
        let Some((program, args)) = argv.split_first() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the command is empty",
            ));
        };
        let mut cmd = std::process::Command::new(program);
        cmd.args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: `in_child` makes only async-signal-safe calls.
            unsafe {
                cmd.pre_exec(in_child);
            }
        }
        self.thread.run(move || cmd.spawn())?
    }

    /// Runs `instance` on a new thread of the container's namespaces that
    /// has first entered a new PID namespace for its children (or failed
    /// to: the error is `instance`'s argument). The instance forks its
    /// process from that thread and stays on it while the process lives,
    /// since `PR_SET_PDEATHSIG` watches the forking thread. A thread per
    /// instance because a thread may unshare its children's PID namespace
    /// only once, and a namespace whose PID 1 exited takes no more.
    pub(crate) fn spawn_instance(
        &self,
        name: String,
        instance: impl FnOnce(io::Result<()>) + Send + 'static,
    ) -> io::Result<()> {
        self.thread.run(move || {
            thread::Builder::new()
                .name(name)
                .spawn(move || {
                    // SAFETY: unshare(2) on the calling thread only.
                    let entered = check(unsafe { libc::unshare(libc::CLONE_NEWPID) });
                    instance(entered);
                })
                .map(drop)
        })?
    }
}

/// Run in the forked child before exec: die with the shim's thread (the
/// server), and lead a session of its own.
pub(crate) fn in_child() -> io::Result<()> {
    // SAFETY: prctl(2), getppid(2) and setsid(2) are async-signal-safe.
    unsafe {
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL))?;
        if libc::getppid() == 1 {
            // The server died between fork and prctl.
            libc::_exit(137);
        }
        libc::setsid();
    }
    Ok(())
}

/// `mount_setattr(2)` on `path` and every mount below it: read-only, or
/// writable again (Linux 5.12).
fn set_read_only(path: &Path, read_only: bool) -> io::Result<()> {
    /// `struct mount_attr` of linux/mount.h.
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    let attr = MountAttr {
        attr_set: if read_only { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if read_only { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    let target = c_path(path)?;
    // SAFETY: the syscall reads `attr` for its size and the C string.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            target.as_ptr(),
            libc::AT_RECURSIVE as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn bind(source: &Path, target: &Path, read_only: bool) -> io::Result<()> {
    let src = c_path(source)?;
    let dst = c_path(target)?;
    // SAFETY: mount(2) with valid C strings.
    check(unsafe {
        libc::mount(
            src.as_ptr(),
            dst.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        )
    })?;
    if read_only {
        // SAFETY: as above; a bind mount is made read-only by a remount.
        check(unsafe {
            libc::mount(
                std::ptr::null(),
                dst.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY,
                std::ptr::null(),
            )
        })?;
    }
    Ok(())
}

/// Directories made for mount points the host lacks, without writing the
/// host: the nearest existing directory is covered by a tmpfs holding
/// bind mounts of its entries, and the missing ones are made in it.
struct Shadows {
    scratch: PathBuf,
    /// Host directories covered so far.
    roots: Vec<PathBuf>,
}

impl Shadows {
    fn make_dir(&mut self, path: &Path) -> io::Result<()> {
        if path.is_dir() {
            return Ok(());
        }
        let mut existing = path.to_path_buf();
        while !existing.exists() {
            if !existing.pop() {
                break;
            }
        }
        let existing = existing.canonicalize()?;
        if self.roots.iter().any(|r| existing.starts_with(r)) {
            return std::fs::create_dir_all(resolved(path, &existing)?);
        }
        if existing == Path::new("/") {
            // A mount point at the top (`/config`): the container gets a
            // root of its own, where the new directory is made.
            self.shadow_root()?;
            let top: PathBuf = path.components().take(2).collect();
            std::fs::create_dir_all(path)?;
            self.roots.push(top);
            return Ok(());
        }
        let stage = self.scratch.join(format!("shadow-{}", self.roots.len()));
        let stage_c = stage_copy(&stage, &existing)?;
        let target = c_path(&existing)?;
        // SAFETY: mount(2) moving the staged tmpfs over the directory.
        check(unsafe {
            libc::mount(
                stage_c.as_ptr(),
                target.as_ptr(),
                std::ptr::null(),
                libc::MS_MOVE,
                std::ptr::null(),
            )
        })?;
        self.roots.push(existing.clone());
        std::fs::create_dir_all(resolved(path, &existing)?)
    }
}

impl Shadows {
    /// Gives the mount namespace a new root: a tmpfs holding bind mounts
    /// of every entry of the host's `/`, swapped in by `pivot_root(2)`, so
    /// directories can be made at its top without writing the host's.
    /// Only this namespace's root changes (the shim thread unshared it).
    fn shadow_root(&mut self) -> io::Result<()> {
        let stage = self.scratch.join("root");
        let stage_c = stage_copy(&stage, Path::new("/"))?;
        let old = stage.join(".old-root");
        std::fs::create_dir(&old)?;
        let old_c = c_path(&old)?;
        // SAFETY: pivot_root(2) with valid C strings; then the old root,
        // reachable at /.old-root, is detached.
        let rc = unsafe { libc::syscall(libc::SYS_pivot_root, stage_c.as_ptr(), old_c.as_ptr()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        std::env::set_current_dir("/")?;
        let detached = c_path(Path::new("/.old-root"))?;
        // SAFETY: umount2(2) with a valid C string.
        check(unsafe { libc::umount2(detached.as_ptr(), libc::MNT_DETACH) })?;
        std::fs::remove_dir("/.old-root")?;
        Ok(())
    }
}

/// Mounts a tmpfs at `stage` holding, for each entry of the directory
/// `of`, a bind mount of it (symlinks copied): a writable stand-in for
/// `of` whose contents are the host's. Returns `stage` as a C string.
fn stage_copy(stage: &Path, of: &Path) -> io::Result<CString> {
    std::fs::create_dir_all(stage)?;
    let stage_c = c_path(stage)?;
    let tmpfs = CString::new("tmpfs").map_err(io::Error::other)?;
    let mode = CString::new("mode=755").map_err(io::Error::other)?;
    // SAFETY: mount(2) with valid C strings.
    check(unsafe {
        libc::mount(
            tmpfs.as_ptr(),
            stage_c.as_ptr(),
            tmpfs.as_ptr(),
            0,
            mode.as_ptr().cast(),
        )
    })?;
    for entry in std::fs::read_dir(of)? {
        let entry = entry?;
        let at = stage.join(entry.file_name());
        let ty = entry.file_type()?;
        if ty.is_symlink() {
            symlink(std::fs::read_link(entry.path())?, &at)?;
            continue;
        }
        if ty.is_dir() {
            std::fs::create_dir(&at)?;
        } else {
            std::fs::File::create(&at)?;
        }
        bind(&entry.path(), &at, false)?;
    }
    Ok(stage_c)
}

/// `path` with its existing prefix replaced by that prefix's canonical
/// form (so a path through `/var/run`, a symlink to `/run`, lands in the
/// shadow of `/run`).
fn resolved(path: &Path, existing: &Path) -> io::Result<PathBuf> {
    let mut prefix = path.to_path_buf();
    let mut rest = Vec::new();
    while !prefix.exists() {
        match prefix.file_name() {
            Some(name) => rest.push(name.to_owned()),
            None => break,
        }
        prefix.pop();
    }
    let mut out = existing.to_path_buf();
    out.extend(rest.iter().rev());
    Ok(out)
}
