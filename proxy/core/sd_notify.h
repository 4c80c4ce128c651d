#pragma once
// systemd's readiness protocol (sd_notify(3)), spoken directly: one datagram per state to the
// unix socket named by $NOTIFY_SOCKET ('@' for the abstract namespace). Without
// $NOTIFY_SOCKET (not run by systemd, or not Type=notify) every call does nothing.
#include <string>

namespace portico::core::sd {

// Sends "READY=1", "STOPPING=1", "STATUS=...", "WATCHDOG=1" or several, newline-separated.
// False when there is a socket and the send failed.
bool notify(const std::string& state);
// The watchdog interval systemd asks for ($WATCHDOG_USEC, for this pid), in seconds; 0: none.
double watchdog_interval();

} // namespace portico::core::sd
