// A real OpenID provider (the `oidc-provider` package) for the console sign-in tests, on a loopback port.
//
// One confidential client for the console's redirect URI with PKCE required (and a public one for a second console); the devInteractions login and consent
// forms (plain HTML: any login name signs in as that account, whatever the password); access tokens are JWTs for
// one resource (RFC 8707), with the claims Switchboard's TokenVerifier reads (email, name, switchboard_roles).
// Configured by environment: REDIRECT_URI, POST_LOGOUT_URI, CLIENT_ID, CLIENT_SECRET, PUBLIC_REDIRECT_URI, RESOURCE,
// AUDIENCE.
// Prints one JSON line {"issuer": ...} once listening; stops on SIGTERM.
import http from 'node:http';
import { generateKeyPairSync } from 'node:crypto';

import Provider from 'oidc-provider';

const env = process.env;
const OPERATORS = new Set(['olivia']); // accounts that get both platform roles
const SHORT_LIVED = 'brief'; // an account whose access tokens last 2 s (the expiry test)
// An account whose access tokens carry 150 group names (a token of some 7 KB, as a provider that puts a user's groups
// in it issues): more than a browser keeps in one cookie.
const BULKY = 'bulky';
const GROUPS = Array.from({ length: 150 }, (_, i) => `directory-group-${String(i).padStart(3, '0')}-of-the-org`);

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', use: 'sig', alg: 'RS256' };

function claimsOf(accountId) {
  return {
    sub: accountId,
    email: `${accountId}@idp.example`,
    name: `${accountId[0].toUpperCase()}${accountId.slice(1)} (IdP)`,
  };
}

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: env.CLIENT_ID,
      client_secret: env.CLIENT_SECRET,
      redirect_uris: [env.REDIRECT_URI],
      post_logout_redirect_uris: [env.POST_LOGOUT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
    {
      // A public client (no secret: PKCE is its only proof), for a second console at PUBLIC_REDIRECT_URI.
      client_id: `${env.CLIENT_ID}-public`,
      redirect_uris: [env.PUBLIC_REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
  ],
  jwks: { keys: [jwk] },
  pkce: { required: () => true },
  scopes: ['openid', 'email', 'profile'],
  claims: { openid: ['sub'], email: ['email'], profile: ['name'] },
  findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => claimsOf(sub) }),
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => env.RESOURCE,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (ctx, resourceIndicator) => {
        if (resourceIndicator !== env.RESOURCE) throw new Provider.errors.InvalidTarget();
        return { scope: 'openid', audience: env.AUDIENCE, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
      },
    },
  },
  extraTokenClaims: async (ctx, token) => {
    if (token.kind !== 'AccessToken') return undefined;
    const { email, name } = claimsOf(token.accountId);
    const roles = OPERATORS.has(token.accountId) ? ['can_manage_tenants', 'can_manage_models'] : [];
    return { email, name, switchboard_roles: roles, ...(token.accountId === BULKY ? { groups: GROUPS } : {}) };
  },
  ttl: {
    AccessToken: (ctx, token) => (token.accountId === SHORT_LIVED ? 2 : 600),
    IdToken: 600,
    Interaction: 600,
    Session: 3600,
    Grant: 3600,
    AuthorizationCode: 60,
  },
  cookies: { keys: ['switchboard-test-provider-cookie-key'] },
});
// The provider's own warnings (development interactions, in-memory adapter) are expected here.
provider.on('server_error', (ctx, err) => console.error('provider error', err));

server.on('request', provider.callback());
process.on('SIGTERM', () => server.close(() => process.exit(0)));
console.log(JSON.stringify({ issuer }));
