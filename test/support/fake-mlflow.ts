import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeMlflowRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  json: unknown;
}

export interface FakeMlflowRun {
  runId: string;
  experimentId: string;
  name: string;
  status: string;
  lifecycleStage: 'active' | 'deleted';
  params: Map<string, string>;
  metrics: Array<{ key: string; value: number; step: number; timestamp: number }>;
  tags: Map<string, string>;
}

/** What a fault hook may do with a request instead of serving it. */
/** `lost-answer`: the request is served, then the connection dropped before the answer. */
export type FakeMlflowFault =
  | { status: number; json?: unknown; text?: string; headers?: Record<string, string> }
  | 'hang'
  | 'reset'
  | 'lost-answer';

/**
 * An in-memory MLflow tracking server on 127.0.0.1 for tests: the REST routes a tracker uses
 * (experiments/get-by-name and create, runs/create, get, update, log-batch) with MLflow's error
 * bodies and its rules (a parameter keeps its first value; a metric repeated with the same key,
 * step, time and value is stored once), every request recorded, and a hook to inject faults.
 */
export class FakeMlflow {
  readonly requests: FakeMlflowRequest[] = [];
  readonly experiments = new Map<string, string>([['Default', '0']]);
  readonly runs = new Map<string, FakeMlflowRun>();
  fault: ((request: FakeMlflowRequest) => FakeMlflowFault | null) | null = null;
  private server: Server | null = null;
  private readonly hanging = new Set<ServerResponse>();

  static async start(): Promise<FakeMlflow> {
    const fake = new FakeMlflow();
    fake.server = createServer((req, res) => void fake.handle(req, res));
    await new Promise<void>((resolve) => fake.server!.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /** Requests to one route (`runs/log-batch`). */
  calls(route: string): FakeMlflowRequest[] {
    return this.requests.filter((r) => r.path === `/api/2.0/mlflow/${route}`);
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const text = Buffer.concat(chunks).toString('utf8');
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {}
    const request: FakeMlflowRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      json,
    };
    this.requests.push(request);
    const fault = this.fault?.(request) ?? null;
    if (fault === 'hang') {
      this.hanging.add(res);
      res.on('close', () => this.hanging.delete(res));
      return;
    }
    if (fault === 'reset') {
      req.socket.destroy();
      return;
    }
    if (fault && fault !== 'lost-answer') {
      res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers });
      res.end(
        fault.text ?? JSON.stringify(fault.json ?? { error_code: 'INTERNAL_ERROR', message: 'injected' }),
      );
      return;
    }
    const reply = (status: number, body: unknown) => {
      if (fault === 'lost-answer') {
        req.socket.destroy();
        return;
      }
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const error = (status: number, code: string, message: string) =>
      reply(status, { error_code: code, message });
    const body = (json ?? {}) as Record<string, unknown>;
    const route = url.pathname.replace('/api/2.0/mlflow/', '');
    const runOf = (id: unknown) => this.runs.get(String(id));
    switch (`${request.method} ${route}`) {
      case 'GET experiments/get-by-name': {
        const id = this.experiments.get(url.searchParams.get('experiment_name') ?? '');
        if (id === undefined) return error(404, 'RESOURCE_DOES_NOT_EXIST', 'Could not find experiment');
        return reply(200, {
          experiment: { experiment_id: id, name: url.searchParams.get('experiment_name') },
        });
      }
      case 'POST experiments/create': {
        const name = String(body.name);
        if (this.experiments.has(name)) return error(400, 'RESOURCE_ALREADY_EXISTS', 'exists');
        const id = String(this.experiments.size);
        this.experiments.set(name, id);
        return reply(200, { experiment_id: id });
      }
      case 'POST runs/create': {
        const runId = `run${this.runs.size + 1}`.padEnd(32, '0');
        const run: FakeMlflowRun = {
          runId,
          experimentId: String(body.experiment_id),
          name: String(body.run_name),
          status: 'RUNNING',
          lifecycleStage: 'active',
          params: new Map(),
          metrics: [],
          tags: new Map(
            ((body.tags ?? []) as Array<{ key: string; value: string }>).map((t) => [t.key, t.value]),
          ),
        };
        this.runs.set(runId, run);
        return reply(200, {
          run: { info: { run_id: runId, experiment_id: run.experimentId, status: 'RUNNING' } },
        });
      }
      case 'POST runs/search': {
        // The one filter a tracker sends: tags.`key` = 'value'.
        const match = /^tags\.`([^`]+)` = '([^']*)'$/.exec(String(body.filter ?? ''));
        if (!match) return error(400, 'INVALID_PARAMETER_VALUE', `unsupported filter ${String(body.filter)}`);
        const ids = (body.experiment_ids ?? []) as string[];
        const runs = [...this.runs.values()].filter(
          (r) => ids.includes(r.experimentId) && r.tags.get(match[1]!) === match[2],
        );
        return reply(
          200,
          runs.length === 0 ? {} : { runs: runs.map((r) => ({ info: { run_id: r.runId } })) },
        );
      }
      case 'GET runs/get': {
        const run = runOf(url.searchParams.get('run_id'));
        if (!run) return error(404, 'RESOURCE_DOES_NOT_EXIST', 'Run not found');
        return reply(200, {
          run: {
            info: {
              run_id: run.runId,
              experiment_id: run.experimentId,
              status: run.status,
              lifecycle_stage: run.lifecycleStage,
            },
            data: { params: [...run.params].map(([key, value]) => ({ key, value })) },
          },
        });
      }
      case 'POST runs/update': {
        const run = runOf(body.run_id);
        if (!run) return error(404, 'RESOURCE_DOES_NOT_EXIST', 'Run not found');
        run.status = String(body.status);
        return reply(200, { run_info: { run_id: run.runId, status: run.status } });
      }
      case 'POST runs/log-batch': {
        const run = runOf(body.run_id);
        if (!run) return error(404, 'RESOURCE_DOES_NOT_EXIST', 'Run not found');
        const params = (body.params ?? []) as Array<{ key: string; value: string }>;
        const metrics = (body.metrics ?? []) as FakeMlflowRun['metrics'];
        if (params.length > 100 || metrics.length > 1000)
          return error(400, 'INVALID_PARAMETER_VALUE', 'batch too large');
        for (const p of params) {
          const before = run.params.get(p.key);
          if (before !== undefined && before !== p.value)
            return error(
              400,
              'INVALID_PARAMETER_VALUE',
              `Changing param values is not allowed. Param with key='${p.key}'`,
            );
        }
        for (const p of params) run.params.set(p.key, p.value);
        for (const m of metrics) {
          const same = run.metrics.some(
            (x) => x.key === m.key && x.step === m.step && x.timestamp === m.timestamp && x.value === m.value,
          );
          if (!same) run.metrics.push({ key: m.key, value: m.value, step: m.step, timestamp: m.timestamp });
        }
        return reply(200, {});
      }
      default:
        return error(404, 'ENDPOINT_NOT_FOUND', `no route ${request.method} ${route}`);
    }
  }
}
