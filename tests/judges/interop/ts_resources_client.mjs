// A client on the TypeScript SDK v2 (@modelcontextprotocol/client) using rootbound serve's resources, for the
// interop tests (issue 49), in the handshake era (where resources/subscribe lives).
//
//   node ts_resources_client.mjs --file URI --dir URI --updates N (--http URL | --stdio COMMAND [ARG...])
//
// It reads --file (resources/read), pages --dir to its end (resources/directory/read, SEP-2640's method, sent as
// a custom request), subscribes to --file, then waits for N notifications/resources/updated for it, printing one
// JSON object per line on stdout:
//   {"step":"read","text":...,"digest":...}   {"step":"pages","pages":P,"names":[...]}   {"step":"subscribed"}
//   {"step":"updated","uri":...,"t":...} (N times; the test writes the file once after each; t: when it arrived,
//   CLOCK_MONOTONIC seconds)   {"step":"done"}
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

function parse(argv) {
    const options = { file: undefined, dir: undefined, updates: 1, http: undefined, stdio: undefined };
    for (let i = 0; i < argv.length; i++) {
        const arg = argv[i];
        if (arg === '--file') options.file = argv[++i];
        else if (arg === '--dir') options.dir = argv[++i];
        else if (arg === '--updates') options.updates = Number(argv[++i]);
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

// A result schema that takes the page as it comes (StandardSchemaV1): the test checks its fields.
const anyResult = { '~standard': { version: 1, vendor: 'rootbound-interop', validate: value => ({ value }) } };

async function main() {
    const options = parse(process.argv.slice(2));
    const client = new Client(
        { name: 'ts-resources-client', version: '1.0.0' },
        { capabilities: {}, versionNegotiation: { mode: 'legacy' } }
    );
    let waiting = [];
    const updates = [];
    const seenAt = []; // CLOCK_MONOTONIC seconds (the clock Python's time.monotonic reads): for bench/resource_updates.py
    client.setNotificationHandler('notifications/resources/updated', notification => {
        updates.push(notification.params.uri);
        seenAt.push(Number(process.hrtime.bigint()) / 1e9);
        const wake = waiting;
        waiting = [];
        wake.forEach(resolve => resolve());
    });
    const transport = options.http
        ? new StreamableHTTPClientTransport(new URL(options.http))
        : new StdioClientTransport({ command: options.stdio[0], args: options.stdio.slice(1), stderr: 'inherit' });
    await client.connect(transport);

    const read = await client.readResource({ uri: options.file });
    const content = read.contents[0];
    emit({ step: 'read', text: content.text ?? null, digest: content._meta?.['io.github.rootbound/resources']?.digest ?? null });

    const names = [];
    let cursor;
    let pages = 0;
    do {
        const params = cursor ? { uri: options.dir, cursor } : { uri: options.dir };
        const page = await client.request({ method: 'resources/directory/read', params }, anyResult);
        pages += 1;
        for (const resource of page.resources) names.push(resource.name);
        cursor = page.nextCursor;
    } while (cursor);
    emit({ step: 'pages', pages, names });

    await client.subscribeResource({ uri: options.file });
    emit({ step: 'subscribed' });
    for (let seen = 0; seen < options.updates; seen++) {
        while (updates.length === 0) await new Promise(resolve => waiting.push(resolve));
        emit({ step: 'updated', uri: updates.shift(), t: seenAt.shift() });
        seenAt.length = 0;
        updates.length = 0; // one write is several events: the next write's update is the next one counted
    }
    emit({ step: 'done' });
    await client.close();
}

const timer = setTimeout(() => {
    console.error('ts_resources_client: timed out');
    process.exit(3);
}, Number(process.env.TS_CLIENT_TIMEOUT_MS ?? 45000));
main().then(
    () => {
        clearTimeout(timer);
        process.exit(0);
    },
    error => {
        console.error(error?.stack ?? String(error));
        process.exit(1);
    }
);
