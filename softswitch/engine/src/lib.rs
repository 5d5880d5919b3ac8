//! `softswitch_engine`: the Python module of aqmlab's software switch.
//! The API is the contract in softswitch/README.md; the BMv2 JSON
//! interpreter is the `p4core` crate; this crate adds the traffic manager,
//! AF_PACKET ports, the packet thread, pcap capture and the Python binding.

pub mod afpacket;
pub mod clock;
mod dataplane;
pub mod offload;
mod pcap;
mod python;
mod shared;
pub mod tm;
