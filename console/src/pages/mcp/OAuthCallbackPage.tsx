// Where the MCP server's authorization server sends the person back (SWITCHBOARD_MCP_OAUTH_REDIRECT_URI must be
// {console}/console/mcp-oauth-callback): the code, state and iss go to the tab that started the flow
// (api/mcpOAuth.ts), which alone holds the PKCE verifier, and this popup closes. Nothing is redeemed or kept here.
import { useEffect, useState } from "preact/hooks";
import { CALLBACK_CHANNEL, CALLBACK_MESSAGE, type CallbackParams } from "../../api/mcpOAuth";

export default function OAuthCallbackPage() {
  const [sent, setSent] = useState(false);
  useEffect(() => {
    const query = new URLSearchParams(location.search);
    const params: CallbackParams = {
      type: CALLBACK_MESSAGE,
      state: query.get("state") ?? "",
      code: query.get("code") ?? "",
      error: query.get("error") ?? "",
      errorDescription: query.get("error_description") ?? "",
      iss: query.get("iss"),
    };
    const opener = window.opener as Window | null;
    if (opener !== null) {
      opener.postMessage(params, location.origin);
    }
    const channel = new BroadcastChannel(CALLBACK_CHANNEL);
    channel.postMessage(params);
    channel.close();
    setSent(true);
    window.close();
  }, []);
  return (
    <section>
      <h1>Connecting the MCP server</h1>
      <p role="status">{sent ? "Done: you can close this window and return to the console." : "Returning to the console…"}</p>
    </section>
  );
}
