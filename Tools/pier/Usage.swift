import Foundation
import PierClient
import PierModels

let usage = """
    pier: Pier from a terminal or a script.

    Usage: pier [--url URL] [--json] COMMAND …

      register EMAIL [--name NAME] [--device NAME]   create an account and sign in (password asked, or --password-stdin)
      login EMAIL [--device NAME] [--code CODE]   sign in (the device name the session list shows; default "pier on HOST");
                                         with two-step sign-in on, the code is asked (or --code, $PIER_MFA_CODE)
      sign-in PROVIDER ID_TOKEN --nonce RAW [--name NAME] [--device NAME]   sign in with an ID token (apple, or an OIDC provider's name)
      anonymous [--device NAME]          start without signing up: an account with no address or password
      keep EMAIL                         keep the anonymous account with an address and a password (asked): a link
                                         is mailed; opening it makes the account permanent, the same id
      merge EMAIL [--code CODE]          sign in to the account that has EMAIL (password asked; a code with two-step
                                         sign-in) and bring the anonymous account into it
      logout [--all]                     sign out here and on the server (--all: every session of the account)
      whoami                             the signed-in user
      profile [--name NAME] [--locale fr-CA]   change your display name or locale ("" clears)
      email verify TOKEN|LINK            verify the address with the mailed link (or its token)
      email change NEW_EMAIL             use another address (password asked unless you signed in within 5 minutes)
      email confirm TOKEN|LINK           confirm the new address with the link mailed to it (or its token)
      email cancel TOKEN|LINK            cancel a change of address with the link mailed to the old address
      email resend [EMAIL]               mail the verification link again (yours, or EMAIL's when signed out)
      password forgot EMAIL              mail a password-reset link
      password reset TOKEN|LINK          set a new password with the mailed link or its token (asked, or --password-stdin)
      identities                         the providers you sign in with (Apple, OpenID Connect)
      identities unlink ID               stop signing in with one (password asked unless you signed in within 5 minutes)
      sessions                           your sessions, one per device
      sessions end ID                    end one of them at once
      export [--output FILE]             download everything Pier holds about you (JSON)
      delete-account [--code CODE]       delete your account (password asked unless you signed in within 5 minutes;
                                         with two-step sign-in on, a code instead)
      mfa                                whether two-step sign-in is on, and the recovery codes left
      mfa enrol [--qr FILE.svg] [--code CODE]   set up an authenticator app (password asked unless you signed in
                                         within 5 minutes); on a terminal its first code is asked, then the
                                         recovery codes printed
      mfa confirm CODE                   confirm the app set up by a script's `mfa enrol`: the recovery codes
      mfa disable [--code CODE]          turn two-step sign-in off (a code, unless you signed in with one within 5 minutes)
      mfa recovery-codes [--code CODE]   ten new recovery codes; the old ones stop working
      passkeys                           your passkeys (added on a device: PierClient's addPasskey, or a browser)
      passkeys rename ID NAME            what the list calls one
      passkeys remove ID [--code CODE]   remove one (password asked unless you signed in within 5 minutes)
      feedback send MESSAGE [--rating 1-5] [--category C] [--platform P]
      feedback list [--limit N] [--cursor C]      your own feedback, with the team's replies
      status [--watch]                   your subscription status (--watch: again at every change, until Ctrl-C)
      plans                              the plans on sale

      admin feedback list [--status S] [--category C] [--platform P] [--app-version V] [--q TEXT] [--moderation M]
                         [--limit N] [--cursor C]
      admin feedback show ID
      admin feedback update ID [--status S] [--duplicate-of ID] [--tags a,b] [--note TEXT] [--moderation approved|rejected]
      admin feedback reply ID MESSAGE    shown in the sender's app, mailed to them
      admin feedback export [--format csv|ndjson] [--output FILE]  (progress on a terminal)
      admin plans create ID --name N --price MINOR_UNITS --currency CUR --period P1M [--trial P1W]
                         [--entitlements a,b] [--products p1,p2] [--google-products p1,p2:basePlan]
                         [--description TEXT]
      admin plans update ID [--name N] [--price …] [--active true|false] …   (the options of create)
      admin plans deactivate ID
      admin grant USER PLAN_ID (--duration P1M | --until DATE) --reason TEXT   (USER: an address or an id)
      admin users QUERY [--limit N]     accounts by address or its start, a display name's start, or id
      admin user USER [--refresh] [--refresh-google]
                                        the account, its subscription status and facts (--refresh: read again
                                        from Apple; --refresh-google: its Google Play purchases from Google)
      admin revoke GRANT_ID             end a grant at once
      admin sessions USER [--end | --session ID]   the account's sessions; --end ends all, --session one
      admin mail USER password-reset|verification  mail the account a link
      admin disable USER | admin enable USER       a disabled account's sessions end and it cannot sign in
      admin role USER user|support|admin           (admins) its sessions end; confirm with --password-stdin or
                                                   $PIER_PASSWORD unless you signed in within 5 minutes
      admin delete USER                 (admins) delete the account and its data, confirmed as role
      admin export USER [--output FILE] everything Pier holds about the account (JSON), recorded in the audit log
      admin audit auth|feedback|subscriptions [--user USER] [--actor ID] [--target ID] [--limit N] [--before N]
                                        what the team did, newest first

      NAME …                            a plugin's command line, pier-NAME (beside pier or on PATH), with the
                                        same arguments and session: `pier config show` runs `pier-config show`

    Options:
      --url URL        the server (default $PIER_URL, else http://127.0.0.1:8080)
      --json           print the answer as JSON (the server's fields), for scripts
      --password-stdin read the password from standard input (else $PIER_PASSWORD, else asked)
      --help           this text

    The session is kept in $XDG_CONFIG_HOME/pier/session.json (else ~/.config/pier/session.json),
    readable by you only.

    Exit codes: 0 done; 1 other failure; 2 usage; 3 not signed in or refused (401/403);
    4 not found; 5 invalid or conflicting (400/409/422); 6 unavailable, rate limited or offline
    (try again later).
    """

/// `pier COMMAND … --help`: the lines of `usage` for that command, and the options; the whole
/// text for no command or one it does not know.
func help(for words: [String]) -> String {
    let topic = words.joined(separator: " ")
    let lines = usage.split(separator: "\n", omittingEmptySubsequences: false)
    // A command's line, and the more indented lines that continue it.
    var commands: [String] = []
    var taking = false
    for line in lines {
        if line.hasPrefix("   "), taking {
            commands[commands.count - 1] += "\n      " + line.trimmingCharacters(in: .whitespaces)
        } else {
            taking = line.hasPrefix("  ") && !line.hasPrefix("   ") && line.dropFirst(2).hasPrefix(topic)
            if taking { commands.append(String(line.dropFirst(2))) }
        }
    }
    guard !topic.isEmpty, !commands.isEmpty, let options = usage.range(of: "Options:") else { return usage }
    return "Usage: pier [--url URL] [--json] …\n  " + commands.joined(separator: "\n  ") + "\n\n" + usage[options.lowerBound...]
}
