// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {Nonces} from "@openzeppelin/contracts/utils/Nonces.sol";

/// @title The sandbox's USDC: an ERC-20 with 6 decimals and ERC-2612 permit under EIP-712 version "2".
/// @notice OpenZeppelin's ERC20Permit hard-codes version "1"; USDC (FiatTokenV2) signs under "2", so
/// permit is written here on top of ERC20, EIP712 and Nonces. Everything the constructor sets lives
/// in immutables (name and minter in the code, no storage), so the runtime code alone can be placed
/// at the USDC address a worker already uses (anvil_setCode) and works there as it is.
/// Like USDC (FiatToken's Blacklistable), a blacklister may blacklist an address: `isBlacklisted`
/// answers for it, and no transfer, mint, burn or permit to or from it goes through; the revert
/// reason is USDC's own, "Blacklistable: account is blacklisted".
contract SandboxUsdc is ERC20, EIP712, Nonces {
    bytes32 private constant PERMIT_TYPEHASH =
        keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");

    /// @notice An account that may mint and burn: the sandbox's relayer, paying a transfer's destination as CCTP does.
    address public immutable minter;
    /// @notice The other: the sandbox's TokenMessengerV2 (SandboxCctp.sol), burning on depositForBurn and minting on receipt.
    address public immutable cctpMinter;

    /// @notice The only account that may blacklist and unblacklist: the sandbox's relayer, through its admin routes.
    address public immutable blacklister;

    mapping(address account => bool) private _blacklisted;

    event Blacklisted(address indexed account);
    event UnBlacklisted(address indexed account);

    error ERC2612ExpiredSignature(uint256 deadline);
    error ERC2612InvalidSigner(address signer, address owner);
    error SandboxUsdcNotMinter(address caller);
    error SandboxUsdcNotBlacklister(address caller);

    constructor(string memory name_, address minter_, address cctpMinter_) ERC20("", "") EIP712(name_, "2") {
        minter = minter_;
        cctpMinter = cctpMinter_;
        blacklister = minter_;
    }

    modifier onlyMinter() {
        if (msg.sender != minter && msg.sender != cctpMinter) revert SandboxUsdcNotMinter(msg.sender);
        _;
    }

    modifier notBlacklisted(address account) {
        require(!_blacklisted[account], "Blacklistable: account is blacklisted");
        _;
    }

    function isBlacklisted(address account) external view returns (bool) {
        return _blacklisted[account];
    }

    function blacklist(address account) external {
        if (msg.sender != blacklister) revert SandboxUsdcNotBlacklister(msg.sender);
        _blacklisted[account] = true;
        emit Blacklisted(account);
    }

    function unBlacklist(address account) external {
        if (msg.sender != blacklister) revert SandboxUsdcNotBlacklister(msg.sender);
        _blacklisted[account] = false;
        emit UnBlacklisted(account);
    }

    /// @dev Every balance change (transfer, transferFrom, mint, burn) passes here: neither end may be blacklisted.
    function _update(address from, address to, uint256 value)
        internal
        override
        notBlacklisted(from)
        notBlacklisted(to)
    {
        super._update(from, to, value);
    }

    function name() public view override returns (string memory) {
        return _EIP712Name();
    }

    function symbol() public pure override returns (string memory) {
        return "USDC";
    }

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    function version() external pure returns (string memory) {
        return "2";
    }

    // solhint-disable-next-line func-name-mixedcase
    function DOMAIN_SEPARATOR() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    /// @notice ERC-2612: sets `spender`'s allowance over `owner`'s tokens to `value`, signed by `owner`
    /// for its current nonce, which this uses up.
    function permit(
        address owner,
        address spender,
        uint256 value,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external notBlacklisted(owner) notBlacklisted(spender) {
        if (block.timestamp > deadline) revert ERC2612ExpiredSignature(deadline);
        bytes32 structHash = keccak256(abi.encode(PERMIT_TYPEHASH, owner, spender, value, _useNonce(owner), deadline));
        address signer = ECDSA.recover(_hashTypedDataV4(structHash), v, r, s);
        if (signer != owner) revert ERC2612InvalidSigner(signer, owner);
        _approve(owner, spender, value);
    }

    function mint(address to, uint256 amount) external onlyMinter {
        _mint(to, amount);
    }

    /// @notice Removes `amount` from `from` (the sandbox sets a balance for a drill by minting or burning;
    /// the messenger burns what depositForBurn moved to it).
    function burn(address from, uint256 amount) external onlyMinter {
        _burn(from, amount);
    }
}
