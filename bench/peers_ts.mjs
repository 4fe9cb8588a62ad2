// The timing half of `bench/peers.py --only ts`: both servers driven through the TypeScript SDK v2 client
// (`Client` + `StdioClientTransport` of @modelcontextprotocol/client, the client most MCP hosts use).
//
//   node bench/peers_ts.mjs CONFIG_JSON
//
// CONFIG_JSON (written by peers.py): {"servers": [{"name", "command": [...], "calls": {op: [tool, arguments]}}],
// "operations": [...], "counts": {op: calls per block}, "rounds", "warmUp", "settleMs"}. Operation "noop" is a ping.
// Node resolves the imports from the script's folder: peers.py runs it through a link in a scratch folder beside a
// node_modules link to .deps/interop/node_modules (the interop tests' TS SDK), with --preserve-symlinks-main.
//
// Each client validates structured content with the SDK's own default engine (AjvJsonSchemaValidator, compiled
// AJV), wrapped only to count the validations, so the bench can prove every call of a tool with an outputSchema
// was validated. One JSON object per line on stdout:
//   {"kind":"tools","peer","withOutputSchema":[tool...]}
//   {"kind":"returned","peer","op","chars"}      characters of text in the first content block (the warm-up)
//   {"kind":"time","peer","op","ms"}             ms per call, one per timed block
//   {"kind":"validated","peer","op","calls","validations","ms"}  totals over all calls, warm-up included; ms: in AJV
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';

function emit(value) {
    process.stdout.write(JSON.stringify(value) + '\n');
}

/** The SDK's default validator provider (Node: AJV), counting each validation it runs and the time it takes. */
class CountingValidator {
    constructor() {
        this.inner = new AjvJsonSchemaValidator();
        this.validations = 0;
        this.ms = 0;
    }
    getValidator(schema) {
        const check = this.inner.getValidator(schema);
        return input => {
            this.validations += 1;
            const started = performance.now();
            try {
                return check(input);
            } finally {
                this.ms += performance.now() - started;
            }
        };
    }
}

async function connect(server) {
    const validator = new CountingValidator();
    const client = new Client(
        { name: 'rootbound-bench', version: '1.0.0' },
        { jsonSchemaValidator: validator, versionNegotiation: { mode: 'legacy' } }
    );
    const transport = new StdioClientTransport({
        command: server.command[0],
        args: server.command.slice(1),
        env: { ...process.env, PYTHONWARNINGS: 'ignore' },
        stderr: 'inherit'
    });
    await client.connect(transport);
    // callTool validates structuredContent against the outputSchema cached from the last tools/list.
    const { tools } = await client.listTools();
    const withOutputSchema = tools.filter(tool => tool.outputSchema).map(tool => tool.name);
    emit({ kind: 'tools', peer: server.name, withOutputSchema });
    return { server, client, validator, withOutputSchema: new Set(withOutputSchema), calls: {}, validations: {}, validationMs: {} };
}

/** One call; returns the characters of text in the first content block (0 for a ping). */
async function call(peer, op) {
    const [before, beforeMs] = [peer.validator.validations, peer.validator.ms];
    let chars = 0;
    if (op === 'noop') {
        await peer.client.ping();
    } else {
        const [name, args] = peer.server.calls[op];
        const result = await peer.client.callTool({ name, arguments: args });
        if (result.isError) throw new Error(`${peer.server.name} ${op}: isError: ${JSON.stringify(result).slice(0, 300)}`);
        const first = result.content?.[0];
        chars = first?.type === 'text' ? first.text.length : 0;
    }
    peer.calls[op] = (peer.calls[op] ?? 0) + 1;
    peer.validations[op] = (peer.validations[op] ?? 0) + peer.validator.validations - before;
    peer.validationMs[op] = (peer.validationMs[op] ?? 0) + peer.validator.ms - beforeMs;
    return chars;
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

async function main() {
    const config = JSON.parse(process.argv[2]);
    const peers = [];
    for (const server of config.servers) peers.push(await connect(server));
    for (const peer of peers) {
        for (const op of config.operations) {
            let chars = 0;
            for (let i = 0; i < 3; i++) chars = await call(peer, op);
            emit({ kind: 'returned', peer: peer.server.name, op, chars });
        }
    }
    for (let round = 0; round < config.rounds; round++) {
        for (const op of config.operations) {
            for (const peer of peers) {
                const n = config.counts[op];
                await sleep(config.settleMs);
                for (let i = 0; i < config.warmUp; i++) await call(peer, op);
                const started = performance.now();
                for (let i = 0; i < n; i++) await call(peer, op);
                emit({ kind: 'time', peer: peer.server.name, op, ms: (performance.now() - started) / n });
            }
        }
    }
    for (const peer of peers) {
        for (const op of config.operations) {
            const validations = peer.validations[op] ?? 0;
            const ms = peer.validationMs[op] ?? 0;
            emit({ kind: 'validated', peer: peer.server.name, op, calls: peer.calls[op] ?? 0, validations, ms });
        }
        await peer.client.close();
    }
}

main()
    .then(() => process.exit(0))
    .catch(error => {
        console.error('peers_ts:', error);
        process.exit(1);
    });
