// What an answer of /api/user, or a failure to get one, says: its JSON, whether it
// is a success and its token, a header's value, whether a failed request may have
// reached the service (and been carried out), a network failure's code. Plain
// functions of the HTTP client (http-client.ts).
import { errors as undiciErrors } from "undici";
import { UserGroupApiError } from "./errors";

export function withAmbiguity(error: UserGroupApiError): UserGroupApiError {
  return new UserGroupApiError({ ...error.details, ambiguous: true }, error.cause !== undefined ? { cause: error.cause } : undefined);
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export function isSuccess(body: unknown): boolean {
  return typeof body === "object" && body !== null && (body as { success?: unknown }).success === 1;
}

export function tokenOf(body: unknown): string | undefined {
  const group = (body as { user_group?: { token?: unknown } }).user_group;
  return typeof group?.token === "string" ? group.token : undefined;
}

export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Network failures after which the service may have received (and carried out) the request. */
export function wasSent(error: unknown): boolean {
  if (error instanceof undiciErrors.ConnectTimeoutError) return false;
  const code = networkCode(error);
  return !(code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "UND_ERR_CONNECT_TIMEOUT");
}

export function networkCode(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return code;
    current = (current as { cause?: unknown }).cause;
  }
  return "network_error";
}
