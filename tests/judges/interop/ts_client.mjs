// A client on the TypeScript SDK v2 (@modelcontextprotocol/client) that declares roots, for the interop tests.
//
//   node ts_client.mjs --era legacy|modern --roots URI[,URI...] [--narrow-to URI[,URI...]] [--read PATH]
//                      (--http URL | --stdio COMMAND [ARG...])
//
// It connects (legacy: the 2025 `initialize` handshake; modern: pinned to 2026-07-28), answers `roots/list`
// (a server→client request in the handshake era, an embedded input request in 2026-07-28) from its current roots,
// and prints one JSON object per line on stdout:
//   {"step":"connected","protocolVersion":...}
//   {"step":"initial","tool":"list_roots","isError":...,"text":...}          and, with --read, a read_file step
//   with --narrow-to: the roots are replaced, `sendRootsListChanged()` is sent (handshake era), and the same
//   calls are repeated as step "narrowed" (no wait in between: the server must not serve the old set).
//   {"step":"done","rootsListCalls":N}
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

function parse(argv) {
    const options = { era: 'legacy', roots: [], narrowTo: undefined, read: undefined, http: undefined, stdio: undefined };
    for (let i = 0; i < argv.length; i++) {
        const arg = argv[i];
        if (arg === '--era') options.era = argv[++i];
        else if (arg === '--roots') options.roots = argv[++i].split(',');
        else if (arg === '--narrow-to') options.narrowTo = argv[++i].split(',');
        else if (arg === '--read') options.read = argv[++i];
        else if (arg === '--http') options.http = argv[++i];
        else if (arg === '--stdio') {
            options.stdio = argv.slice(i + 1);
            break;
        } else throw new Error(`unknown argument ${arg}`);
    }
    if (!options.http === !options.stdio) throw new Error('exactly one of --http URL or --stdio COMMAND is required');
    return options;
}

function emit(value) {
    process.stdout.write(JSON.stringify(value) + '\n');
}

async function call(client, step, name, args) {
    const result = await client.callTool({ name, arguments: args });
    const text = (result.content ?? []).map(block => (block.type === 'text' ? block.text : `[${block.type}]`)).join('\n');
    emit({ step, tool: name, isError: result.isError === true, text });
}

async function main() {
    const options = parse(process.argv.slice(2));
    let roots = options.roots.map(uri => ({ uri }));
    let rootsListCalls = 0;
    const client = new Client(
        { name: 'ts-interop-client', version: '1.0.0' },
        {
            capabilities: { roots: { listChanged: true } },
            versionNegotiation: { mode: options.era === 'modern' ? { pin: '2026-07-28' } : 'legacy' }
        }
    );
    client.setRequestHandler('roots/list', async () => {
        rootsListCalls += 1;
        return { roots };
    });
    const transport = options.http
        ? new StreamableHTTPClientTransport(new URL(options.http))
        : new StdioClientTransport({ command: options.stdio[0], args: options.stdio.slice(1), stderr: 'inherit' });
    await client.connect(transport);
    emit({ step: 'connected', protocolVersion: client.getNegotiatedProtocolVersion?.() ?? null });

    await call(client, 'initial', 'list_roots', {});
    if (options.read) await call(client, 'initial', 'read_file', { path: options.read });
    if (options.narrowTo) {
        roots = options.narrowTo.map(uri => ({ uri }));
        if (options.era !== 'modern') await client.sendRootsListChanged();
        await call(client, 'narrowed', 'list_roots', {});
        if (options.read) await call(client, 'narrowed', 'read_file', { path: options.read });
    }
    emit({ step: 'done', rootsListCalls });
    await client.close();
}

const timer = setTimeout(() => {
    console.error('ts_client: timed out');
    process.exit(3);
}, Number(process.env.TS_CLIENT_TIMEOUT_MS ?? 30000));
main()
    .then(() => {
        clearTimeout(timer);
        process.exit(0);
    })
    .catch(error => {
        console.error('ts_client:', error);
        process.exit(1);
    });
