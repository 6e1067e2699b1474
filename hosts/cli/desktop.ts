/**
 * `liveagent desktop`: the Electron host. Electron's binary is not installed with this package,
 * so where it cannot start we say so in one line.
 */
export async function runDesktop(): Promise<number> {
  process.stderr.write('liveagent: the desktop app cannot start here: Electron is not installed (use `liveagent serve` and open the WebUI)\n');
  return 1;
}
