/**
 * `liveagent serve`: the server host (WebUI + gateway on an embedded SQLite store).
 */
export async function runServe(opts: { port: number; host: string }): Promise<number> {
  const entry = '../server/start-server.js';
  const mod = (await import(entry)) as { startServer(o: { port: number; host: string }): Promise<{ close(): Promise<void> }> };
  const server = await mod.startServer(opts);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
  return 0;
}
