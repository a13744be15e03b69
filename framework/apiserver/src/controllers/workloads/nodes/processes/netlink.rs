//! Just enough rtnetlink (rtnetlink(7)) to set up a pod's new network
//! namespace from inside it: bring its loopback device up and give it
//! the pod's IP and the Service IPs the server answers on. Nothing else is
//! configured, so nothing in the namespace routes anywhere but to itself.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const RTM_NEWLINK: u16 = 16;
const RTM_NEWADDR: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_EXCL: u16 = 0x200;
const NLM_F_CREATE: u16 = 0x400;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const IFF_UP: u32 = 0x1;
/// `RT_SCOPE_HOST`: an address usable only on this host (here: inside the
/// namespace), as loopback addresses are.
const RT_SCOPE_HOST: u8 = 254;
/// A new network namespace holds exactly one device, `lo`, always index 1.
const LOOPBACK_INDEX: u32 = 1;

/// Brings `lo` of the calling thread's network namespace up and adds each
/// address to it as a /32.
pub(super) fn loopback_up_with(addresses: &[Ipv4Addr]) -> io::Result<()> {
    let socket = open()?;
    // ifinfomsg: family, pad, type, index, flags, change.
    let mut link = Vec::with_capacity(16);
    link.extend_from_slice(&[libc::AF_UNSPEC as u8, 0]);
    link.extend_from_slice(&0u16.to_ne_bytes());
    link.extend_from_slice(&(LOOPBACK_INDEX as i32).to_ne_bytes());
    link.extend_from_slice(&IFF_UP.to_ne_bytes());
    link.extend_from_slice(&IFF_UP.to_ne_bytes());
    request(&socket, RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, 1, &link)?;
    for (n, ip) in addresses.iter().enumerate() {
        // ifaddrmsg: family, prefix length, flags, scope, index; then the
        // address as IFA_LOCAL and IFA_ADDRESS.
        let mut addr = vec![libc::AF_INET as u8, 32, 0, RT_SCOPE_HOST];
        addr.extend_from_slice(&LOOPBACK_INDEX.to_ne_bytes());
        for ty in [IFA_LOCAL, IFA_ADDRESS] {
            addr.extend_from_slice(&8u16.to_ne_bytes());
            addr.extend_from_slice(&ty.to_ne_bytes());
            addr.extend_from_slice(&ip.octets());
        }
        let flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
        request(&socket, RTM_NEWADDR, flags, n as u32 + 2, &addr)?;
    }
    Ok(())
}

fn open() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned
    // at once.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sends one request and reads its acknowledgement: the kernel's error
/// code, 0 for success.
fn request(socket: &OwnedFd, ty: u16, flags: u16, seq: u32, payload: &[u8]) -> io::Result<()> {
    let len = 16 + payload.len();
    let mut msg = Vec::with_capacity(len);
    msg.extend_from_slice(&(len as u32).to_ne_bytes());
    msg.extend_from_slice(&ty.to_ne_bytes());
    msg.extend_from_slice(&flags.to_ne_bytes());
    msg.extend_from_slice(&seq.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(payload);
    // SAFETY: the buffer is valid for `msg.len()` bytes.
    let sent = unsafe { libc::send(socket.as_raw_fd(), msg.as_ptr().cast(), msg.len(), 0) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut answer = [0u8; 512];
    // SAFETY: the buffer is valid for its length.
    let got = unsafe {
        libc::recv(
            socket.as_raw_fd(),
            answer.as_mut_ptr().cast(),
            answer.len(),
            0,
        )
    };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    let got = got as usize;
    if got < 20 || u16::from_ne_bytes([answer[4], answer[5]]) != NLMSG_ERROR {
        return Err(io::Error::other("unexpected rtnetlink answer"));
    }
    let code = i32::from_ne_bytes([answer[16], answer[17], answer[18], answer[19]]);
    if code != 0 {
        return Err(io::Error::from_raw_os_error(-code));
    }
    Ok(())
}
