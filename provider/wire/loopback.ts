// Loopback hosts: traffic to them never leaves the machine. The client allows
// plain HTTP only to these; the fake server keeps its admin API on them.

/** `localhost`, 127.0.0.0/8 and ::1 (also IPv4-mapped, with or without brackets). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h) || /^::ffff:127(\.\d{1,3}){3}$/.test(h);
}
