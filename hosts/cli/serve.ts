/**
 * `liveagent serve`: the server host (WebUI + gateway on an embedded SQLite store).
 */
export async function runServe(opts: { port: number; host: string }): Promise<number> {
  const { startServer } = await import('../server/start-server.js');
  const server = await startServer(opts);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.close();
  return 0;
}
