"""Remote config's console pages in headless Chromium, against the stock `pier-gateway` (started
by scripts/plugin-outside.sh after http_test.py): the menu entry, a parameter added with hostile
text in every field (refused first, every value kept, each problem beside its field), the
overview, an edit, the preview "what does this user get and why", the history with its diff, a
rollback, the plugin's actions in the console's audit log and its event in the webhook filter,
and what support may not do. Screenshots land in SHOTS.

    python3 console_test.py BASE_URL ADMIN_EMAIL ADMIN_PASSWORD SUPPORT_EMAIL SUPPORT_PASSWORD CUSTOMER_EMAIL PIER_ROOT SHOTS
"""
import os
import sys

base, admin_email, admin_password, support_email, support_password, customer, pier, shots = sys.argv[1:9]
# Pier's own browser helpers (a headless Chromium, checks, waits, the hostile-page checks).
sys.path.insert(0, os.path.join(pier, "Tests", "Browser"))
from browsing import Browsing  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

def newest_version():
    """The version published before these pages are tried (http_test.py publishes some first)."""
    import json
    import urllib.request
    login = urllib.request.Request(base + "/auth/login", method="POST", headers={"Content-Type": "application/json"},
                                   data=json.dumps({"email": admin_email, "password": admin_password}).encode())
    token = json.load(urllib.request.urlopen(login))["accessToken"]
    listed = urllib.request.Request(base + "/config/versions", headers={"Authorization": "Bearer " + token})
    items = json.load(urllib.request.urlopen(listed))["items"]
    return items[0]["version"] if items else 0


before = newest_version()
HOSTILE = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
browser = Browsing(base, shots)
driver, check, wait_for = browser.driver, browser.check, browser.wait_for


def main_text():
    return driver.find_element(By.TAG_NAME, "main").text


def safe(where):
    browser.no_dialog(where)
    browser.injected(where)


def sign_in(email, password):
    driver.delete_all_cookies()
    driver.get(base + "/console/sign-in")
    driver.find_element(By.NAME, "email").send_keys(email)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_for(lambda: "/console/inbox" in driver.current_url, email + " signed in")


def fill(name, value):
    field = driver.find_element(By.NAME, name)
    field.clear()
    field.send_keys(value)


def submit(selector="form[data-parameter] button[type=submit]"):
    """Sends the form and waits for the next page (the one shown is marked first: a click starts
    a navigation, it does not wait for it)."""
    navigate(lambda: driver.find_element(By.CSS_SELECTOR, selector).click())


def navigate(action):
    driver.execute_script("document.body.dataset.left = 'yes'")
    action()
    wait_for(lambda: driver.execute_script("return document.readyState === 'complete' && !document.body.dataset.left"),
             "the next page loads")


# The menu leads to the plugin's page.
sign_in(admin_email, admin_password)
entry = driver.find_elements(By.LINK_TEXT, "Remote config")
check(len(entry) == 1, "the console's menu has the plugin's page")
navigate(entry[0].click)
wait_for(lambda: driver.find_element(By.TAG_NAME, "h1").text == "Remote config", "the overview opens")
check(before > 0 or "Nothing published yet" in main_text(), "before any publication the overview says so")
safe("the empty overview")

# A new parameter with hostile text everywhere, refused first for a rollout and a version that
# are not: every value kept, each problem beside its field.
navigate(driver.find_element(By.LINK_TEXT, "Add a parameter").click)
wait_for(lambda: "New parameter" in driver.find_element(By.TAG_NAME, "h1").text, "the new parameter's form")
fill("key", "greeting_text")
driver.find_element(By.CSS_SELECTOR, "select[name=type] option[value=string]").click()
fill("default", HOSTILE)
fill("description", HOSTILE)
fill("rule0.name", HOSTILE)
fill("rule0.value", "Bonjour " + HOSTILE)
fill("rule0.locales", "fr")
fill("rule0.versionFrom", "two")
fill("rule0.rollout", "lots")
fill("note", HOSTILE)
submit()
wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "[aria-invalid=true]"), "the refused form is drawn again")
invalid = sorted(field.get_attribute("name") for field in driver.find_elements(By.CSS_SELECTOR, "[aria-invalid=true]"))
check(invalid == ["rule0.rollout"], "the rollout is refused beside its field first: %r" % invalid)
check(driver.find_element(By.NAME, "rule0.name").get_attribute("value") == HOSTILE, "the rule's name is kept as typed")
check(driver.find_element(By.NAME, "default").get_attribute("value") == HOSTILE, "the default is kept as typed")
safe("the refused form")
browser.shot("config-refused")
fill("rule0.rollout", "100")
submit()
wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "[aria-invalid=true]"), "refused again, by the API this time")
invalid = sorted(field.get_attribute("name") for field in driver.find_elements(By.CSS_SELECTOR, "[aria-invalid=true]"))
check(invalid == ["rule0.versionFrom"], "the version is refused beside its field: %r" % invalid)
check("version such as" in main_text(), "the API's words for the version are shown")
fill("rule0.versionFrom", "2.0")
submit()
wait_for(lambda: "published" in main_text(), "published")
check("Version %d published" % (before + 1) in main_text(), "the overview says which version was published")
check(HOSTILE in main_text(), "the hostile text is shown as text")
safe("the overview")
browser.shot("config-overview")

# A boolean flag for the customers with an entitlement, and for accounts chosen by address.
driver.get(base + "/console/config/parameters/new")
fill("key", "paywall_v2")
driver.find_element(By.CSS_SELECTOR, "select[name=type] option[value=bool]").click()
fill("default", "off")
fill("rule0.name", "Pro users")
fill("rule0.value", "on")
fill("rule0.entitlements", "pro")
fill("rule0.accounts", "nobody-here@example.com")
submit()
wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "[aria-invalid=true]"), "an unknown address is refused")
check("No account has the address nobody-here@example.com" in main_text(), "the unknown address is named")
# Refused, the form offers another rule: the beta testers, by address.
fill("rule0.accounts", "")
fill("rule1.name", "Beta testers")
fill("rule1.value", "on")
fill("rule1.accounts", customer)
fill("note", "the paywall for pro")
submit()
wait_for(lambda: "Version %d published" % (before + 2) in main_text(), "the second version published")
check("with pro" in main_text() and "1 chosen account" in main_text(), "the rule in words: %r" % main_text()[:400])

# What the customer gets, and why.
navigate(driver.find_element(By.LINK_TEXT, "What does someone get?").click)
wait_for(lambda: driver.find_elements(By.NAME, "account"), "the preview's form")
fill("account", customer)
fill("locale", "fr-CA")
fill("appVersion", "2.1")
fill("installation", HOSTILE)
submit("form.filters button[type=submit]")
wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "table[data-preview]"), "the preview answers")
text = main_text()
check("the rule “Beta testers”" in text, "the flag comes from the rule on the account: %r" % text[-400:])
check("Bonjour" in text, "the French rule holds for fr-CA at 2.1 (or the rollout left it out): %r" % text[-400:])
safe("the preview")
browser.shot("config-preview")

# An edit, then the history and the diff, then a rollback (confirmed in a dialog).
driver.get(base + "/console/config/parameters/greeting_text")
fill("default", "Hello")
fill("note", "plain words")
submit()
wait_for(lambda: "Version %d published" % (before + 3) in main_text(), "the third version published")
navigate(driver.find_element(By.LINK_TEXT, "History").click)
wait_for(lambda: "history" in driver.find_element(By.TAG_NAME, "h1").text, "the history")
rows = driver.find_elements(By.CSS_SELECTOR, "tbody tr")
check(len(rows) == before + 3 and rows[0].text.startswith(str(before + 3)), "the versions, newest first")
safe("the history")
navigate(driver.find_element(By.LINK_TEXT, str(before + 3)).click)
wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "table[data-diff]"), "the third version's diff")
diff = driver.find_element(By.CSS_SELECTOR, "table[data-diff]").text
check("Everyone gets" in diff and "Hello" in diff and HOSTILE in diff, "the diff shows before and now: %r" % diff)
check(not driver.find_elements(By.CSS_SELECTOR, "form[action$='/rollback']"), "no rollback to the version apps get")
safe("a version's diff")
browser.shot("config-diff")
driver.get(base + "/console/config/versions/%d" % (before + 2))
def roll_back():
    driver.find_element(By.CSS_SELECTOR, "form[action$='/rollback'] button").click()
    driver.switch_to.alert.accept()


navigate(roll_back)
wait_for(lambda: "Version %d published" % (before + 4) in main_text(), "the rollback published a fourth version")
cells = [row.find_elements(By.TAG_NAME, "td") for row in driver.find_elements(By.CSS_SELECTOR, "tbody tr")]
defaults = {row[0].text: row[2].text for row in cells if len(row) > 2}
check(defaults.get("greeting_text") == "“" + HOSTILE + "”", "the second version's default is back: %r" % defaults)

# The plugin's actions in the console's audit log, its event in the webhook filter.
driver.get(base + "/console/audit?service=config")
text = main_text()
check("published the remote config" in text and "rolled the remote config back" in text,
      "the audit log says what was done in words: %r" % text[:500])
driver.get(base + "/console/audit?action=config.rolled_back")
rows = driver.find_elements(By.CSS_SELECTOR, "tbody tr")
check(len(rows) >= 1 and all("rolled the remote config back" in row.text for row in rows),
      "filtered by the plugin's action: %d" % len(rows))
check(driver.find_elements(By.CSS_SELECTOR, "tbody a[href='/console/config/versions/%d']" % (before + 4)),
      "the entry links to the version it published")
check("Rollout percent" not in driver.page_source and "Changed: greeting_text" in main_text(),
      "the plugin's fields in words: %r" % main_text()[-300:])
browser.shot("config-audit")
safe("the audit log")
driver.get(base + "/console/webhooks?type=config.published")
options = [option.get_attribute("value") for option in driver.find_elements(By.CSS_SELECTOR, "select[name=type] option")]
check("config.published" in options, "the webhook filter offers the plugin's event: %r" % options)
wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "tbody tr[data-href]"), "deliveries of config.published")
safe("the webhooks")

# Support reads but does not publish: no form to send, and a forged post is refused by the API.
sign_in(support_email, support_password)
check(len(driver.find_elements(By.LINK_TEXT, "Remote config")) == 1, "support has the page in the menu")
driver.get(base + "/console/config/parameters/greeting_text")
check(not driver.find_elements(By.CSS_SELECTOR, "form[data-parameter] button[type=submit]"), "support has no publish button")
check("Only admins publish" in main_text(), "support is told who publishes")
driver.execute_script("document.querySelectorAll('fieldset').forEach(f => f.disabled = false);"
                      "const b = document.createElement('button'); b.type = 'submit'; b.id = 'forged';"
                      "document.querySelector('form[data-parameter]').appendChild(b);")
navigate(driver.find_element(By.ID, "forged").click)
wait_for(lambda: driver.find_element(By.TAG_NAME, "h1").text != "Parameter greeting_text", "the forged post is answered")
check("Not allowed for your role" in main_text(), "the API refuses support's publication: %r" % main_text()[:200])
driver.get(base + "/console/config/nothing/here")
check("Not found" in main_text(), "an unknown page under the plugin's is a page saying so")
safe("support's view")

browser.quit()
if browser.failures:
    print("console_test: %d failure(s)" % len(browser.failures), file=sys.stderr)
    sys.exit(1)
print("console_test: remote config's console pages work in Chromium, hostile text stays text")
