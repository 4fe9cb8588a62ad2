// A small server on the TypeScript SDK v2 (@modelcontextprotocol/server + /node) whose tools ask the client for
// its roots: `ctx.mcpReq.send({method: 'roots/list'})` in the handshake era, an `inputRequired(...)` round with
// `inputRequired.listRoots()` in 2026-07-28. The interop tests point rootbound's RootsProvider at it.
//
//   node ts_server.mjs --stdio          serveStdio: the opening exchange picks the era for the connection
//   node ts_server.mjs --http PORT      http://127.0.0.1:PORT/mcp (0: a free port): 2026-07-28 requests through
//                                       createMcpHandler, handshake-era requests through sessionful transports
//
// Tools:
//   roots                 JSON {era, roots, listChanged} (listChanged: notifications/roots/list_changed received
//                         on this connection so far; always 0 in 2026-07-28, which has no such notification)
//   declared_capabilities JSON of the roots capability this request (modern) or connection (handshake) declared
// On HTTP the first stdout line is `listening on <url>`.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';
import {
    createMcpHandler,
    inputRequired,
    inputResponse,
    isLegacyRequest,
    McpServer,
    MissingRequiredClientCapabilityError
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';

function text(value) {
    return { content: [{ type: 'text', text: JSON.stringify(value) }] };
}

function build({ era }) {
    const server = new McpServer({ name: 'ts-roots-server', version: '1.0.0' }, { capabilities: { tools: {} } });
    let listChanged = 0;
    if (era === 'legacy') {
        server.server.setNotificationHandler('notifications/roots/list_changed', () => {
            listChanged += 1;
        });
    }
    const declared = ctx =>
        era === 'modern'
            ? ctx.mcpReq.envelope?.[CAPABILITIES_KEY]?.roots
            : server.server.getClientCapabilities()?.roots;

    server.registerTool('roots', { description: "The client's roots, asked for in the era's way" }, async ctx => {
        if (declared(ctx) === undefined) {
            throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { roots: {} } });
        }
        if (era === 'legacy') {
            const result = await ctx.mcpReq.send({ method: 'roots/list' });
            return text({ era, roots: result.roots, listChanged });
        }
        const answer = inputResponse(ctx.mcpReq.inputResponses, 'roots');
        if (answer.kind !== 'roots') {
            return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
        }
        return text({ era, roots: answer.roots, listChanged });
    });
    server.registerTool('declared_capabilities', { description: 'The roots capability the client declared' }, async ctx =>
        text({ era, roots: declared(ctx) ?? null })
    );
    return server;
}

async function readBody(req) {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const raw = Buffer.concat(chunks).toString('utf8');
    return raw ? JSON.parse(raw) : undefined;
}

function serveHttp(port) {
    const modern = toNodeHandler(createMcpHandler(build, { legacy: 'reject' }));
    const sessions = new Map();
    const httpServer = createServer(async (req, res) => {
        try {
            const body = req.method === 'POST' ? await readBody(req) : undefined;
            const sessionId = req.headers['mcp-session-id'];
            const legacy = sessionId !== undefined || req.method !== 'POST' || (await isLegacyRequest(await toWebRequest(req, body), body));
            if (!legacy) {
                await modern(req, res, body);
                return;
            }
            let transport = sessionId === undefined ? undefined : sessions.get(sessionId);
            if (transport === undefined) {
                if (body?.method !== 'initialize') {
                    res.writeHead(sessionId === undefined ? 400 : 404, { 'content-type': 'application/json' });
                    res.end(JSON.stringify({ jsonrpc: '2.0', id: body?.id ?? null, error: { code: -32600, message: 'no session' } }));
                    return;
                }
                transport = new NodeStreamableHTTPServerTransport({
                    sessionIdGenerator: () => randomUUID(),
                    onsessioninitialized: id => sessions.set(id, transport)
                });
                transport.onclose = () => {
                    if (transport.sessionId) sessions.delete(transport.sessionId);
                };
                await build({ era: 'legacy' }).connect(transport);
            }
            await transport.handleRequest(req, res, body);
        } catch (error) {
            console.error('ts_server:', error);
            if (!res.headersSent) res.writeHead(500);
            res.end();
        }
    });
    httpServer.listen(port, '127.0.0.1', () => {
        console.log(`listening on http://127.0.0.1:${httpServer.address().port}/mcp`);
    });
    const stop = () => {
        for (const transport of sessions.values()) transport.close().catch(() => {});
        httpServer.close();
        httpServer.closeAllConnections();
        process.exit(0);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
}

const [mode, port] = process.argv.slice(2);
if (mode === '--stdio') {
    serveStdio(build, { onerror: error => console.error('ts_server:', error) });
} else if (mode === '--http') {
    serveHttp(Number(port ?? 0));
} else {
    console.error('usage: ts_server.mjs --stdio | --http PORT');
    process.exit(2);
}
