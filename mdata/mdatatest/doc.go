// Package mdatatest is a simulated SmartOS/Triton metadata host agent that
// answers the mdata protocol with the semantics of the real agent
// (smartos-live src/vm/lib/metadata/agent.js), for testing clients the way
// net/http/httptest tests HTTP clients: at the wire, over a pty, a unix
// socket or any io.ReadWriter such as one end of net.Pipe.
//
// Its data comes from a Store the test fills (Default returns a realistic
// sample VM). Host.Client hands a test a client connected to the host, as
// httptest.Server.Client does, and Host.Transport a transport for a client
// made with mdata.New and options of the test's choosing. The host answers line by line exactly as agent.js does:
//
//   - an empty line (the clients' probe) gets "invalid command";
//   - "NEGOTIATE V2" gets "V2_OK"; V2 frames are accepted without it;
//   - V1 "GET key" and "KEYS" get SUCCESS with a dot-stuffed body, NOTFOUND
//     or FAILURE; V1 PUT and DELETE are unknown commands (FAILURE);
//   - a V2 frame whose form, length or CRC is wrong gets no reply at all;
//     an unknown V2 code gets a V2 FAILURE "Unknown command X";
//   - PUT and DELETE follow the agent's rules: "sdc:" keys are read-only,
//     an empty PUT value is an "Invalid PUT Request", deleting a missing
//     key succeeds, "_pw" keys and operator-script go to internal metadata.
//
// One deliberate difference: the agent decodes PUT values as UTF-8 text,
// the simulator keeps them as bytes, so that clients can be tested with
// binary values.
//
// A Fault (SetFault) makes the host misbehave as real hosts and shared
// serial lines do: a pre-V2 agent, silence, junk, stale or corrupt frames
// before the real reply, a byte-at-a-time link, late replies, replies cut
// off, FAILURE to the probe; optionally only for the first N times, so a
// test can check that the client recovers. Down, Up, DownFor and Restart
// take the agent away and bring it back; InjectInput and InjectOutput
// leave behind what a killed client leaves on a serial line.
//
// Every line received and every reply sent is kept in a transcript
// (Transcript), counted (Stats), and can be waited for (Wait, WaitServed)
// instead of sleeping.
//
// # Stability
//
// This package is part of seedkeeper's stable API, with mdata, datasource and netcfg. Within a major
// version its exported names keep their meaning and are not removed; before
// 1.0.0 a minor release may change them, and CHANGELOG.md says how under
// "Breaking". No exported signature mentions an internal package: all of it
// can be used from another module, with values computed at run time.
package mdatatest
